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
local floor, format = math.floor, string.format -- looked up once a call
local function fdiv(a, b)
  local q = floor(a / b)
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

-- int returns the integer x as text: '%d', which takes half the time, for
-- the integers below 2^31 in magnitude, which the C long '%d' goes through
-- holds exactly on every build of Redis, 32-bit ones included; the others
-- (zero, which may be -0, larger ones, not integers) as '%.0f' writes them,
-- which '%d' would not.
local function int(x)
  if x % 1 == 0 and x ~= 0 and x < 2147483648 and x > -2147483648 then
    return format('%d', x)
  end
  return format('%.0f', x)
end
