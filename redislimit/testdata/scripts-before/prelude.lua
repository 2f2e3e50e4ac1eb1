-- Shared by every script. KEYS[1] is the key's state. ARGV:
--   1 n: requests to take (0 only reports, < 0 is denied)
--   2 now: the caller's clock in ticks, or '' for the server's TIME in µs
--   3 limit, 4 window (ticks), 5 burst
--   6 ticks per millisecond (for the key's TTL)
--   7 extra: besides n, take up to this many more when n passes (a lease)
--   8 give back: when > 0, return this many requests, taken at time ARGV 9,
--     as far as they still count (see hotlimit.Refunder), first: the
--     scripts that lease (token bucket, GCRA, fixed window) then decide n
--     as usual, so that a call carrying an expired lease's leftovers takes
--     with them returned; the others take nothing (the Go side sends them
--     a give back only with n = 0)
--   9 at: the time, in ticks, of the take that give back returns, or ''
--     for a take now, by the clock above (atNow): the time a take now is
--     stamped with, which is now, or later when the clock reads behind the
--     key's state (a fixed window's or sliding counter's later window, a
--     sliding log's newest time), as each script sets it
-- Every script returns {allowed, remaining, retry after, reset after,
-- extra taken, now}, durations in ticks, retry after -1 for never.
-- Numbers are doubles: every value stays an integer below 2^53 in
-- magnitude, as the Go side checks (the Config's ranges when it builds the
-- limiter, a caller's clock within ±2^51 on each call), so arithmetic is
-- exact; a value that could go beyond (GCRA's tokens far behind) is never
-- computed.
local n = tonumber(ARGV[1])
local now
if ARGV[2] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[2])
end
local limit = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
local burst = tonumber(ARGV[5])
local perms = tonumber(ARGV[6])
local extra = tonumber(ARGV[7])
local giveback = tonumber(ARGV[8])
local atNow = ARGV[9] == ''
local at = now
if not atNow then
  at = tonumber(ARGV[9])
end
local key = KEYS[1]

-- fdiv returns floor(a / b) for integers a and b > 0: the double quotient
-- can round across an integer, so the result is corrected by one.
local function fdiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then
    q = q - 1
  elseif (q + 1) * b <= a then
    q = q + 1
  end
  return q
end

-- cdiv returns ceil(a / b) for integers a and b > 0.
local function cdiv(a, b)
  return -fdiv(-a, b)
end

local function int(x)
  return string.format('%.0f', x)
end

-- born is when the key's state was made, as the text stored after its
-- fields: a give back for a take before it (the state was lost since, to a
-- restart, a FLUSHALL or an eviction, and made again) returns nothing, since
-- this state never counted that take. load sets it, to now for a key it does
-- not find; nil for a key stored without it, which takes every give back.
-- It is kept as text, written back as read, so that a save formats no number
-- for it; load reads it as a number only to check that it is one, took and
-- counted to compare it.
local born = nil

-- save stores the key's fields and then born, separated by spaces, for ttl
-- ticks, rounded up to the millisecond, plus a second: a key that expires
-- is as good as a fresh one. (A reader of two fields that knows nothing of
-- born reads it as an optional third and ignores it.)
local function save(ttl, a, b, c)
  local v = int(a) .. ' ' .. int(b)
  if c then
    v = v .. ' ' .. int(c)
  end
  if born then
    v = v .. ' ' .. born
  end
  redis.call('SET', key, v, 'PX', math.max(cdiv(ttl, perms), 0) + 1000)
end

-- exact bounds every number a limiter of this Config stores: its times
-- (within the clock's range, ±2^51 ticks), its counts and its tokens times
-- window (below 2^52), as the Go side checks.
local exact = 2 ^ 52

-- inexact reports whether x is beyond exact.
local function inexact(x)
  return math.abs(x) >= exact
end

-- load returns the key's k stored fields (2 or 3) as numbers, or nil, and
-- sets born from the field after them. A value of another layout, or one
-- that no limiter of this Config stores (a number beyond exact, fields
-- that valid, given them, rejects: tokens or counts out of their range),
-- is someone else's: it is taken for a fresh key's, and overwritten by the
-- next take, rather than decided on (a Remaining above the burst or below
-- zero, waits that overflow) or left to fail the script.
local function load(k, valid)
  local v = redis.call('GET', key)
  local a, b, c, d
  if v then
    a, b, c, d = string.match(v, '^(%-?%d+) (%-?%d+) ?(%-?%d*) ?(%-?%d*)$')
  end
  if k == 2 then
    born = c
  else
    born = d
  end
  if born == '' then
    born = nil
  end
  a, b, c = tonumber(a), tonumber(b), tonumber(c)
  local t = born and tonumber(born) -- a born that is no number ('-') is not ours
  if not (a and b and (k == 2 or c) and (born == nil or t)) or inexact(a) or inexact(b)
      or k == 3 and inexact(c) or born and inexact(t) or not valid(a, b, c) then
    born = int(now)
    return nil
  end
  if k == 2 then
    return a, b
  end
  return a, b, c
end

-- took notes that the state counts a take at now: a clock that stepped back
-- behind the state's making lowers born to now, so that the take's own give
-- back finds it counted.
local function took()
  if born and now < tonumber(born) then
    born = int(now)
  end
end

-- counted reports whether the key's state counted a take at tick at: it
-- holds one, made no later than at. A take now (atNow) is always the
-- state's: made at a clock behind the state's making, it would have moved
-- born back to now (see took).
local function counted(held, at)
  return held and (atNow or born == nil or tonumber(born) <= at)
end
