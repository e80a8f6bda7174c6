# say and die for the ci scripts, sourced: say prints a line, die prints one on stderr and exits
# 1, each after the name the sourcing script gives in SAY_AS ("kwok: ...").
say() { printf '%s%s\n' "${SAY_AS:+$SAY_AS: }" "$*"; }
die() {
	printf '%s%s\n' "${SAY_AS:+$SAY_AS: }" "$*" >&2
	exit 1
}
