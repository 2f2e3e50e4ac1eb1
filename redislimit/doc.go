// Package redislimit enforces hotlimit's limiters across many processes, with
// each key's state in Redis: every instance of a service that builds a
// Limiter of the same [hotlimit.Config] on the same Redis shares one limit.
//
//	client := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
//	lim, err := redislimit.New(client, hotlimit.Config{
//		Algorithm: hotlimit.GCRA, Limit: 100, Window: time.Minute,
//	})
//	...
//	if !lim.Allow("user-42") {
//		// 429
//	}
//
// # Semantics
//
// Every algorithm of hotlimit (TokenBucket, FixedWindow, SlidingLog, GCRA,
// SlidingCounter) is one Lua script, run atomically by Redis with EVALSHA
// (after a restart or a SCRIPT FLUSH the server answers NOSCRIPT, and the
// script is sent again with EVAL, transparently). The scripts keep the
// reference semantics of the in-memory limiters and fill the same Decision
// fields; the tests replay the in-memory packages' sequential models against
// Redis.
//
// Time is Redis's: each script reads TIME, in microseconds, so clients whose
// clocks disagree still agree on every decision; fixed and sliding-counter
// windows are aligned on the Unix epoch. With [hotlimit.WithClock] the
// caller's clock is sent instead, in nanoseconds (the tests use a fake one):
// every instance must then read one clock, as Redis's TIME is. A clock
// behind a key's time refills nothing and opens no new window, but one d
// ahead of the others sees d pass and refills d's worth (a window's count,
// across a window's start). So does Redis's own TIME when a key's node
// changes: a replica promoted by a failover, or a slot moved to another
// master, decides the keys by its clock, and one d ahead of the old node's
// refills them d's worth (a clock stepped forward on one node does too).
// Lua numbers are doubles, exact below 2^53; New rejects a Config whose
// arithmetic could leave that range (see New), and a call whose
// [hotlimit.WithClock] reading is outside ±2^51 ns fails with
// [ErrClockRange].
//
// Each key is one Redis key, "<prefix><algorithm>:<limit>:<window>:<burst>:<unit>:{<key>}":
// the prefix ([WithPrefix], "hotlimit:" by default) and the Config keep
// limiters apart, and the braces make the key its own hash tag, so that a
// Redis Cluster places a key's state for every Config on one node (but for
// an empty key or one that begins with "}", whose tag is empty: Redis then
// hashes the whole name, and each Config's state may sit on another node;
// each script call touches one Redis key, so it works the same). Every key
// is written with a TTL of the time it takes to return to a full quota, plus
// a second: an idle key vanishes by itself, and one that vanished is as good
// as a fresh one. The window is in ticks of the unit, "µs" of Redis's TIME or
// "ns" under hotlimit.WithClock, and the burst is the limit where none is set:
// "hotlimit:GCRA:100:60000000:100:µs:{user-42}" for the Config above.
//
// A Limiter of another Config (algorithm, limit, window, burst) counts under
// other keys. While the instances disagree on a limit, as in a rolling deploy
// that changes it, each Config enforces its own apart: together they admit up
// to the old limit plus the new, and the new Config's keys start from a full
// quota, since the old keys' counts are not carried over (they expire with
// their TTLs).
//
// State that Redis loses (a restart without persistence, FLUSHALL, a key
// evicted under maxmemory) is a fresh key's: the next take starts from a
// full quota, never more. So is a value under a limiter's key that no
// limiter of its Config writes (someone else's: another layout, tokens or
// counts out of their range, numbers beyond 2^52 or a window that starts
// there, a sorted set that is not the sliding log's), which the next take
// overwrites; one of another Redis type fails the call with [ErrReply]. A
// key records when it was made (or the earliest
// reading of a take it counted since, for a clock that stepped back), and a
// refund, or the give-back of a lease, of a take made before then returns
// nothing, as the key never counted that take (with [hotlimit.WithClock],
// "before" is by the clocks' readings). The sliding log's sorted set records no such
// time, but the times its requests were logged at: a give-back expires no
// more of them than were logged no later than the take, and a key made
// since logged all of its own later (an instance of an earlier version
// takes such a give-back). The time is stored after the key's
// fields, where the token bucket's, GCRA's and fixed window's scripts of
// earlier versions read past it; a sliding counter's key written with it
// reads as fresh to an earlier version's script, so instances upgraded one by
// one may admit a fresh key's quota again on such keys until all run this
// version.
//
// A failover loses state too: Redis replicates a script's writes after it
// answers, so a master that dies takes its last writes along, and the
// replica promoted in its place holds their keys as they were before them.
// The requests those writes counted pass again: at most what the master
// admitted within its replica's replication lag, which redislimit does not
// wait for (Redis's min-replicas-to-write and min-replicas-max-lag bound
// it). Such a key was made before those takes, so a refund, or a lease's
// give-back, of one of them gives back a request that the key never
// counted, which passes once more.
//
// A Redis that refuses a call names why in the error: [ErrAuth],
// [ErrReadOnly], [ErrOutOfMemory], [ErrRedisVersion].
//
// New works with a single node, a Sentinel (failover) client and a Cluster
// client: any redis.UniversalClient, of Redis 5.0 or later (the tests run
// 7.x). The scripts read TIME and then write, which a Redis before 5.0
// refuses: it replicated a script whole by default, and a replica running
// it again would read another time. Since 5.0 Redis replicates a script's
// writes instead (the only way since 7.0), so the scripts do not call
// redis.replicate_commands(). An older Redis fails every call with
// [ErrRedisVersion], and the failure policy decides.
//
// # Failures
//
// When Redis cannot decide (an error, the timeout of [WithTimeout], 100 ms by
// default whatever the client's options, the open breaker of [WithBreaker]),
// the [FailPolicy] of [WithFailPolicy] does: [FailLocal] (the default) decides
// with an in-process limiter of the same Config, [FailOpen] admits,
// [FailClosed] denies. [Limiter.TakeContext] returns the error together with
// that decision; Take and Allow return the decision alone; [WithHook] sees
// every such decision. A Redis that refuses connections reads as one that did
// not answer in time under go-redis's default options, which dial and send
// again until the deadline; a client with DialerRetries 1 and MaxRetries -1
// gets the refusal as the error at once. What a failure policy admits is not counted in Redis:
// once Redis decides again, a key has there what it had before, on top of what
// the policy admitted meanwhile. The circuit breaker (on by default: 3 errors
// in a row open it for 1 s; a key of another Redis type, an error of that
// key alone, counts as Redis answering) makes a dead Redis cost a few atomic
// loads per call instead of a timeout, and lets one call probe Redis when
// the cooldown ends.
// On a cluster client the breaker is one per master: a dead master's slots
// fail, the others' keys are still decided by Redis; and a failed call makes
// the client reload its slot map, so that once a replica is promoted its slots
// are decided by Redis again within a cooldown or so, not when go-redis would
// next reload the map (a minute).
//
// A connection that fails after a take was sent may make go-redis send it
// again (its MaxRetries): the take then counts twice in Redis, once more
// than its decision says (under-admission). A give-back (a refund, a
// lease's leftovers) is never sent twice, since it would return a request
// that was never taken: its connection's failure is its error.
//
// # Throughput
//
// A call made while no other is under way is one round trip. Calls made
// concurrently, for any keys, share pipelines ([WithBatch]): Redis reads,
// runs and answers a whole batch per system call. What that gains in
// decisions per second depends on the machine and the load (make bench
// measures it with batching on and off). [TakeAll] decides
// several takes at once, under limiters of any Config on one client (the
// several limits of one request), in one round trip: a pipeline sent by the
// caller, or, while other calls of its first take's limiter are under way,
// that limiter's next batch, shared with the concurrent calls. A Limiter is
// a [hotlimit.Batcher] ([Limiter.TakeBatch] is TakeAll), so a service rule
// of several limits on one client asks them in one round trip, but for its
// sliding logs, each asked after them on its own, and its limits with a
// lease, each asked in its turn (see [Limiter.Batches]); a
// composite.Limiter asks its children on one client so too. When one of
// those limits denies a request, the others give it back and report in one
// more round trip: one script call each, the give-back's, whose reply is
// the report ([Take].GiveBack). A denial by the first of two limits thus
// costs two round trips and three script calls (the takes, and the
// second's give-back), where the limits asked one by one make two round
// trips and two calls (the first's take, the second's report).
//
// For a hot key, [WithLease] takes a batch of requests from Redis in the same
// script call that admits one, and spends them in this process without a
// round trip. A lease never over-admits (every leased request was taken in
// Redis first); it under-admits by what the leases hold, at most the lease
// size per instance and key (twice that while a new lease's call gives the
// one it replaces back), and gives what is unspent back once it has ended
// (in the script call of the instance's next call for the key that goes to
// Redis, which then counts it back; when the key's next lease replaces it;
// on [Limiter.Sweep] or [Limiter.Close]; or by the auto-sweep that grants
// for new keys start once the limiter holds [hotlimit.WithAutoSweep]'s
// threshold of leases): a
// fixed window's while its window lasts, a token bucket's or GCRA's less
// what the key refilled since Redis took it (counted as [Limiter.Refund]
// counts it), so that a bucket whose leases
// keep ending unspent loses up to a lease's size per lease (see
// [WithLease]).
//
// # Refunds and the service
//
// A receipt's time is the limiter's clock's, Redis's TIME by default: a
// give-back stamped with this process's clock would be judged by Redis's,
// which disagrees with it by the clocks' skew. [Limiter.RefundNowContext]
// gives back requests taken now, by the limiter's clock, for a caller that
// holds no receipt (a rate limit service told to give hits back).
//
// A Limiter is a [hotlimit.Refunder], so a [service.Service] built with
// [Factory] keeps every rule in Redis, rules of several limits included:
//
//	svc, err := service.New(def, hotlimit.WithFactory(redislimit.Factory(client)))
//
// A rule may keep some of its limits in Redis and the others in memory: the
// factory is a plain function of the limit's [hotlimit.Config] (given
// without its scope), so it may send each where the user wants it, the long
// windows to Redis say, and the short ones, which one instance can enforce
// on its own traffic, to [service.NewLimiter]:
//
//	redisLimits := redislimit.Factory(client)
//	mixed := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
//		if c.Window >= time.Hour {
//			return redisLimits(c, opts...)
//		}
//		return service.NewLimiter(c, opts...)
//	}
//	svc, err := service.NewFromRules(rules, hotlimit.WithFactory(mixed))
//
// Such a rule is all or nothing as any other: a request the Redis limit
// denies is given back to the memory limits that took it, and one a memory
// limit denies is given back to Redis (a round trip; when it fails, Redis
// keeps the request until it ages out). While Redis cannot decide, a
// [FailOpen] or [FailClosed] decision counts nothing anywhere, and the
// memory limits count exactly the requests the rule admits; a [FailLocal]
// decision gives no receipt, so a request its in-process limiter admitted
// and a limit asked after it denied stays counted in that in-process
// limiter: during an outage the rule may admit less than its Redis limit
// would have on its own, never more. Put the Redis limits last in the rule
// to avoid that (the service asks sliding logs last whatever the order, so
// a sliding log in memory comes after them anyway). Limits on one client
// asked together, in the first one's turn and the others ahead of theirs
// (one round trip, see the service's Take), are not decided by their
// failure policies ahead: while Redis cannot decide them, the first is
// decided by its failure policy, and each other one is asked again in its
// turn (hotlimit.BatchTake.Ahead), so that its FailLocal counts what it
// would count asked in turn.
//
// A denial's RetryAfter, in a rule of several limits or a composite.Limiter,
// is the wait until every limit admits the request: the limits after the
// one that denied it are asked for theirs (see service.Service.Take). An
// in-memory sliding log tells it without a Take
// (slidinglog.Limiter.RetryAfter), which counts nothing; a sliding log
// here has no such question. It is asked by a Take for one request,
// refunded when it admits it (its state changed since its report, under
// concurrent requests), and that give-back expires its oldest logged
// request, not the question's, which so stays counted for a window; and it
// is not asked about a request of more than one at all, whose RetryAfter
// then leaves it out: the retry may be denied again.
//
// A composite.Limiter of a Limiter and in-memory limiters is all or
// nothing as well, each child refunded with its own receipt when another
// denies. But its own receipt holds one time, the earliest of its
// children's, and the in-memory limiters' clock (the process's, from its
// start) reads far behind Redis's TIME, before the Redis key was made: a
// Refund of the composite's receipt gives the in-memory children their
// requests back and Redis nothing, never more, so they stay counted in
// Redis until they refill or their window ends. A service rule keeps each
// limit's own receipt; use one where a request is given back after it
// passed.
package redislimit
