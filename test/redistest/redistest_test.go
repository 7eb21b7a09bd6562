package redistest_test

import (
	"context"
	"testing"

	"github.com/flowgate/flowgate/test/redistest"
)

func TestLeasesAreDistinctAndCleaned(t *testing.T) {
	ctx := context.Background()
	var num int
	t.Run("lease", func(t *testing.T) {
		a := redistest.New(t)
		b := redistest.New(t)
		if a.Num == b.Num {
			t.Fatalf("two leases got database %d", a.Num)
		}
		num = a.Num
		if err := a.Client.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	})
	c := redistest.New(t)
	if c.Num == num {
		if n := c.Client.DBSize(ctx).Val(); n != 1 { // only the marker
			t.Fatalf("database %d not cleaned: %d keys", num, n)
		}
	}
}

// A REDIS_URL in the shell (a deployment's, e.g. after README's Going live
// loaded a .env) does not choose the tests' Redis: only
// FLOWGATE_TEST_REDIS_URL does.
func TestBaseURLIgnoresREDIS_URL(t *testing.T) {
	t.Setenv(redistest.URLEnv, "redis://127.0.0.1:7/0")
	t.Setenv("REDIS_URL", "redis://production.example:6379/0")
	if got := redistest.BaseURL(); got != "redis://127.0.0.1:7/0" {
		t.Fatalf("BaseURL = %q, want %s's value", got, redistest.URLEnv)
	}
	t.Setenv(redistest.URLEnv, "")
	if got := redistest.BaseURL(); got != "redis://127.0.0.1:6379/0" {
		t.Fatalf("BaseURL = %q with REDIS_URL set and %s unset, want the default", got, redistest.URLEnv)
	}
}
