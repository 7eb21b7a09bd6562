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
// EVALSHA, FCALL and their read-only forms.
func ScriptUsec(stats map[string]CommandStat) float64 {
	return stats["eval"].Usec + stats["evalsha"].Usec + stats["eval_ro"].Usec + stats["evalsha_ro"].Usec +
		stats["fcall"].Usec + stats["fcall_ro"].Usec
}

// ServerCPU is redis-server's CPU time in seconds, user + system, as INFO
// cpu reports it: the whole process's, or with mainThread its main
// thread's (the one that runs commands and scripts).
func ServerCPU(ctx context.Context, rdb redis.UniversalClient, mainThread bool) (float64, error) {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, fmt.Errorf("redistest: INFO cpu: %w", err)
	}
	return parseCPU(info, mainThread), nil
}

func parseCPU(info string, mainThread bool) float64 {
	suffix := ""
	if mainThread {
		suffix = "_main_thread"
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user"+suffix || k == "used_cpu_sys"+suffix) {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}

// ReadsProcessed is INFO stats' total_reads_processed: one per read of a
// client's socket, however many commands it brought (pipelined commands
// share one). It counts every client of the server.
func ReadsProcessed(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	info, err := rdb.Info(ctx, "stats").Result()
	if err != nil {
		return 0, fmt.Errorf("redistest: INFO stats: %w", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_reads_processed:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("redistest: INFO stats has no total_reads_processed")
}
