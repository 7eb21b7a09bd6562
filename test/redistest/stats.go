package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// CommandStat is one command's line of INFO commandstats.
type CommandStat struct {
	Calls       int64
	Usec        float64 // Redis time in the command, microseconds, all calls
	UsecPerCall float64
}

// CommandStats reads INFO commandstats, by command name in lower case
// ("evalsha", "config|resetstat"). The figures count every database of
// the server, so a measurement wants a server of its own
// (rediscluster.StartServer), or deltas.
func CommandStats(ctx context.Context, rdb redis.UniversalClient) (map[string]CommandStat, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("redistest: INFO commandstats: %w", err)
	}
	return ParseCommandStats(info), nil
}

// ParseCommandStats parses an INFO commandstats answer.
func ParseCommandStats(info string) map[string]CommandStat {
	out := map[string]CommandStat{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		cmd, isStat := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isStat {
			continue
		}
		var st CommandStat
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				st.Calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				st.Usec, _ = strconv.ParseFloat(v, 64)
			case "usec_per_call":
				st.UsecPerCall, _ = strconv.ParseFloat(v, 64)
			}
		}
		out[cmd] = st
	}
	return out
}

// ScriptUsec is the Redis time of every script call in stats: EVAL,
// EVALSHA and their read-only forms.
func ScriptUsec(stats map[string]CommandStat) float64 {
	return stats["eval"].Usec + stats["evalsha"].Usec + stats["eval_ro"].Usec + stats["evalsha_ro"].Usec
}
