package supervisor

import "syscall"

const nonblock = syscall.O_NONBLOCK
