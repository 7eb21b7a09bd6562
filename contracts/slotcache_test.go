package contracts_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/contracts"
)

// A refreshHistory entry's dateRange is the original's string; entries
// flowgate recorded before as {start, end} (YYYY-MM-DD) read as the same
// string, and null as none.
func TestDateSpanReadsOldEntries(t *testing.T) {
	for raw, want := range map[string]contracts.DateSpan{
		`"11/28/2026 to 02/26/2027"`:                "11/28/2026 to 02/26/2027",
		`{"start":"2026-11-28","end":"2027-02-26"}`: "11/28/2026 to 02/26/2027",
		`null`: "",
	} {
		var e contracts.CacheRefreshEntry
		require.NoError(t, json.Unmarshal([]byte(`{"tier":1,"dateRange":`+raw+`}`), &e), raw)
		require.Equal(t, want, e.DateRange, raw)
	}
	out, err := json.Marshal(contracts.CacheRefreshEntry{DateRange: contracts.NewDateSpan("11/28/2026", "02/26/2027")})
	require.NoError(t, err)
	require.Contains(t, string(out), `"dateRange":"11/28/2026 to 02/26/2027"`)
	out, err = json.Marshal(contracts.CacheRefreshEntry{})
	require.NoError(t, err)
	require.Contains(t, string(out), `"dateRange":null`)
	var e contracts.CacheRefreshEntry
	require.Error(t, json.Unmarshal([]byte(`{"dateRange":7}`), &e))
}
