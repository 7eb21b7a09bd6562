package availability

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flowgate/flowgate/test/clocktest"
	"github.com/flowgate/flowgate/test/redistest"
)

var prefixSeq atomic.Int64

// bundle is what a test needs: a Store and a Catalog on the sample
// schedule in a leased database, with a fake clock.
type bundle struct {
	rdb     *redis.Client
	clock   *clocktest.Clock
	store   *Store
	catalog *Catalog
	prefix  string
}

// monday0800 is Monday 2026-11-23 08:00 CST (14:00 UTC): "now" of the tests.
var monday0800 = time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)

func setup(t testing.TB, rdb *redis.Client) *bundle {
	t.Helper()
	b := &bundle{rdb: rdb, clock: clocktest.New(monday0800)}
	b.prefix = "t" + strings.ReplaceAll(t.Name(), "/", "_") + itoa64(prefixSeq.Add(1)) + ":"
	var err error
	b.store, err = NewStore(rdb, StoreConfig{KeyPrefix: b.prefix, Now: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	sched, hash, err := LoadScheduleFile(filepath.Join("testdata", "schedule.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.SeedSchedule(context.Background(), sched, hash); err != nil {
		t.Fatal(err)
	}
	b.catalog, err = NewCatalog(CatalogConfig{Source: ScheduleSource{Store: b.store}, Store: b.store, Now: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// keysLike lists the keys under the bundle's prefix matching pattern
// (after "{availability}:"); tests only.
func (b *bundle) keysLike(t testing.TB, pattern string) []string {
	t.Helper()
	ks, err := b.rdb.Keys(context.Background(), b.prefix+"{availability}:"+pattern).Result()
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func newDB(t testing.TB) *redis.Client { return redistest.New(t).Client }

func TestMain(m *testing.M) { os.Exit(m.Run()) }

func writeFile(path, body string) error { return os.WriteFile(path, []byte(body), 0o600) }

func errorsIs(err, target error) bool { return errors.Is(err, target) }
