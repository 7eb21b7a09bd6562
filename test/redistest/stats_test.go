package redistest

import "testing"

func TestParseCommandStats(t *testing.T) {
	info := "# Commandstats\r\ncmdstat_evalsha:calls=2000,usec=49000,usec_per_call=24.50,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_eval:calls=2,usec=100,usec_per_call=50.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_config|resetstat:calls=1,usec=3,usec_per_call=3.00\r\nnot a stat line\r\n"
	st := ParseCommandStats(info)
	if got := st["evalsha"]; got.Calls != 2000 || got.Usec != 49000 || got.UsecPerCall != 24.5 {
		t.Fatalf("evalsha = %+v", got)
	}
	if st["config|resetstat"].Calls != 1 || len(st) != 3 {
		t.Fatalf("stats = %+v", st)
	}
	if u := ScriptUsec(st); u != 49100 {
		t.Fatalf("ScriptUsec = %v", u)
	}
}

func TestParseCPU(t *testing.T) {
	info := "# CPU\r\nused_cpu_sys:1.50\r\nused_cpu_user:2.25\r\nused_cpu_sys_children:9\r\n" +
		"used_cpu_sys_main_thread:1.00\r\nused_cpu_user_main_thread:2.00\r\n"
	if got := parseCPU(info, false); got != 3.75 {
		t.Fatalf("process CPU = %v", got)
	}
	if got := parseCPU(info, true); got != 3 {
		t.Fatalf("main thread CPU = %v", got)
	}
}
