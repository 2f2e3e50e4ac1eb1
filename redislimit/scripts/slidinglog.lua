-- Sliding log, exact: the key is a sorted set of its last limit logged times
-- (score: the time; member: the time and a sequence number, zero-padded so
-- that members of one time sort in logging order). A request is logged at
-- the later of its clock reading and the newest logged time, and passes when
-- fewer than limit logged times are in (t - window, t]. The reply's time is
-- the one its requests were logged at: a receipt's, which a give back
-- names.
local cnt = redis.call('ZCARD', key)
local newest, top = nil, nil
if cnt > 0 then
  top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  -- a score is read by arithmetic, not tonumber: Redis writes it as text
  -- in a form it does not promise ("200000000" or "2e+08"), and Lua's
  -- arithmetic reads either, where some Lua 5.1 interpreters' tonumber
  -- (gopher-lua's, which miniredis runs) reads no exponent without a point
  newest = top[2] + 0
  -- A set that no limiter of this Config keeps is someone else's: more
  -- than limit members, a newest member not of the form above (its
  -- sequence number is read) or a time beyond exact (within the clock's
  -- range, ±2^51 ticks, as the Go side checks). It is taken for a fresh
  -- key's and removed, rather than decided on (a negative Remaining, waits
  -- that overflow) or left to fail the script. Members below the newest
  -- are not checked: one outside the window is never read (a denial's
  -- wait reads a member ranked among the last inWindow), and the next
  -- takes trim it.
  local ok = cnt <= limit and math.abs(newest) < 2 ^ 52
  if ok then
    local tm = string.match(top[1], '^(%-?%d+):%d+$')
    ok = tm ~= nil and tonumber(tm) == newest
  end
  if not ok then
    redis.call('DEL', key)
    cnt, newest, top = 0, nil, nil
  end
end
if cnt == 0 and (n == 0 or giveback > 0) then
  return {1, limit, 0, 0, 0, now}
end
local t = now
if newest and newest > t then
  t = newest
end
local inWindow = redis.call('ZCOUNT', key, '(' .. int(t - window), '+inf')
if atNow then
  -- a take now is logged at t, the newest logged time when the clock reads
  -- behind it: requests taken now are those logged up to t
  at = t
end

local allowed, retry = 0, 0
if giveback > 0 then
  -- while they are in the window, expire up to giveback of the oldest
  -- logged requests still in it (those ranked from cnt - inWindow), and
  -- no more than those logged at or before at. The take's own requests
  -- were logged at at, so while the key holds them as many are; a key
  -- made since the take (its state lost to a restart, a FLUSHALL, an
  -- eviction) logged all its requests later, and gets nothing back.
  local held = 0
  if at > t - window and inWindow > 0 then
    held = redis.call('ZCOUNT', key, '(' .. int(t - window), int(at))
  end
  local k = math.min(giveback, inWindow, held)
  if k > 0 then
    redis.call('ZREMRANGEBYRANK', key, cnt - inWindow, cnt - inWindow + k - 1)
    inWindow = inWindow - k
    if inWindow == 0 then
      newest = nil
    end
  end
elseif n < 0 or n > limit then
  retry = -1
elseif n == 0 then
  allowed = 1
elseif inWindow + n <= limit then
  allowed = 1
  local seq = 0
  if newest == t then
    seq = tonumber(string.match(top[1], ':(%d+)$')) + 1
  end
  -- in chunks: unpack's results must fit Lua's C stack
  local args = {}
  for i = 0, n - 1 do
    args[#args + 1] = int(t)
    args[#args + 1] = int(t) .. ':' .. string.format('%010d', seq + i)
    if #args == 1000 or i == n - 1 then
      redis.call('ZADD', key, unpack(args))
      args = {}
    end
  end
  redis.call('ZREMRANGEBYRANK', key, 0, -(limit + 1))
  redis.call('PEXPIRE', key, math.max(cdiv(t + window - now, perms), 0) + 1000)
  inWindow = inWindow + n
  newest = t
else
  -- the n-th oldest of the last limit times, counting missing ones as oldest
  local pos = n - 1 - (limit - cnt)
  local at = redis.call('ZRANGE', key, pos, pos, 'WITHSCORES')
  retry = at[2] + window - now -- the score by arithmetic, as newest
end

local reset = 0
if newest and newest > t - window then
  reset = newest + window - now
end
local logged = now
if allowed == 1 and n > 0 then
  logged = t
end
return {allowed, limit - inWindow, retry, reset, 0, logged}
