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
