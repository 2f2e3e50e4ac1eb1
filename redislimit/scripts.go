package redislimit

import (
	_ "embed"

	"github.com/hotlimit/hotlimit"
	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/prelude.lua
	prelude string
	//go:embed scripts/tokenbucket.lua
	tokenBucketLua string
	//go:embed scripts/fixedwindow.lua
	fixedWindowLua string
	//go:embed scripts/slidinglog.lua
	slidingLogLua string
	//go:embed scripts/gcra.lua
	gcraLua string
	//go:embed scripts/slidingcounter.lua
	slidingCounterLua string
)

// scripts holds one script per algorithm, each the shared prelude followed by
// the algorithm. redis.Script runs them by EVALSHA and sends the source again
// only when the server answers NOSCRIPT (after a restart or SCRIPT FLUSH).
var scripts = map[hotlimit.Algorithm]*redis.Script{
	hotlimit.TokenBucket:    redis.NewScript(prelude + tokenBucketLua),
	hotlimit.FixedWindow:    redis.NewScript(prelude + fixedWindowLua),
	hotlimit.SlidingLog:     redis.NewScript(prelude + slidingLogLua),
	hotlimit.GCRA:           redis.NewScript(prelude + gcraLua),
	hotlimit.SlidingCounter: redis.NewScript(prelude + slidingCounterLua),
}
