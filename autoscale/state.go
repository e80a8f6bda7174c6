package autoscale

import (
	"encoding/json"
	"fmt"

	"github.com/minicluster/minicluster/internal/idset"
)

// State is one line of autoscale-state.py: Flux's view of its brokers and queue at one time.
type State struct {
	Time float64 `json:"time"`
	// Ranks is the number of brokers the instance's resources hold (the MiniCluster's maxSize).
	Ranks int `json:"ranks"`
	// Online, Allocated: RFC 22 idsets of the brokers online and of those running a job.
	Online    string `json:"online"`
	Allocated string `json:"allocated"`
	// Drain maps an idset of drained brokers to the reason given.
	Drain map[string]string `json:"drain"`
	// All, Up, Busy: the resources of every broker, of those up, and those allocated.
	All     Count `json:"all"`
	Up      Count `json:"up"`
	Busy    Count `json:"busy"`
	Pending []Job `json:"pending"`
	Stats   Stats `json:"stats"`
	// Error is set instead of the rest when Flux did not answer.
	Error string `json:"error"`
}

// Count is a number of nodes, cores and GPUs.
type Count struct {
	Nodes int `json:"nodes"`
	Cores int `json:"cores"`
	GPUs  int `json:"gpus"`
}

// Job is a job the scheduler holds, with what its jobspec asks for in all.
type Job struct {
	ID    uint64 `json:"id"`
	Nodes int    `json:"nodes"`
	Cores int    `json:"cores"`
	GPUs  int    `json:"gpus"`
	// Held: urgency or priority 0, so it waits for a person, not for brokers.
	Held  bool   `json:"held"`
	Queue string `json:"queue"`
}

// Stats is job-list's job-stats answer: jobs by state and results since the instance started.
type Stats struct {
	States     map[string]int `json:"job_states"`
	Successful int            `json:"successful"`
	Failed     int            `json:"failed"`
	Timeout    int            `json:"timeout"`
	Canceled   int            `json:"canceled"`
	Queues     []QueueStats   `json:"queues"`
}

// QueueStats are Stats of one named queue.
type QueueStats struct {
	Name   string         `json:"name"`
	States map[string]int `json:"job_states"`
}

// ParseState decodes one line of autoscale-state.py.
func ParseState(line []byte) (State, error) {
	var s State
	if err := json.Unmarshal(line, &s); err != nil {
		return s, fmt.Errorf("a line of Flux's state: %w", err)
	}
	if s.Error != "" {
		return s, fmt.Errorf("flux: %s", s.Error)
	}
	if s.Ranks < 1 {
		return s, fmt.Errorf("flux's state names %d brokers", s.Ranks)
	}
	return s, nil
}

// ranks expands an idset of the state, capped at the instance's size.
func (s State) ranks(set string) (map[int]bool, error) {
	out := map[int]bool{}
	if set == "" {
		return out, nil
	}
	ids, err := idset.Parse(set, s.Ranks)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// drainedBy returns the brokers drained with a reason that starts with prefix.
func (s State) drainedBy(prefix string) (map[int]bool, error) {
	out := map[int]bool{}
	for set, reason := range s.Drain {
		if len(reason) < len(prefix) || reason[:len(prefix)] != prefix {
			continue
		}
		ids, err := s.ranks(set)
		if err != nil {
			return nil, err
		}
		for id := range ids {
			out[id] = true
		}
	}
	return out, nil
}

// drainedAll returns every drained broker, whatever the reason.
func (s State) drainedAll() (map[int]bool, error) { return s.drainedBy("") }
