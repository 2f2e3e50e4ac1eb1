-- Shared by the scripts that keep the key's state as a string of numbers
-- (token bucket, GCRA, fixed window, sliding counter), after prelude.lua;
-- the sliding log, a sorted set, makes none of these functions.

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
  local v
  if c then
    v = int(a) .. ' ' .. int(b) .. ' ' .. int(c)
  else
    v = int(a) .. ' ' .. int(b)
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

-- load returns the key's k stored fields (2 or 3) as numbers, or nil, and
-- sets born from the field after them. A value of another layout, or one
-- that no limiter of this Config stores (a number beyond exact), is someone
-- else's: it is taken for a fresh key's, made now, and overwritten by the
-- next take, rather than decided on (a Remaining above the burst or below
-- zero, waits that overflow) or left to fail the script. Each script then
-- checks the fields' ranges (tokens or counts) and, for fields out of them,
-- does as load does (born = int(now)): no function is made for that check.
local function load(k)
  local v = redis.call('GET', key)
  local a, b, c, d
  if v then
    -- the fourth field is matched, and captured only when it is born
    if k == 2 then
      a, b, c = string.match(v, '^(%-?%d+) (%-?%d+) ?(%-?%d*) ?%-?%d*$')
      born = c
    else
      a, b, c, d = string.match(v, '^(%-?%d+) (%-?%d+) ?(%-?%d*) ?(%-?%d*)$')
      born = d
    end
    if born == '' then
      born = nil
    end
  end
  a, b, c = tonumber(a), tonumber(b), tonumber(c)
  local t = born and tonumber(born) -- a born that is no number ('-') is not ours
  if not (a and b and (k == 2 or c) and (born == nil or t)) or a >= exact or a <= -exact
      or b >= exact or b <= -exact or k == 3 and (c >= exact or c <= -exact)
      or born and (t >= exact or t <= -exact) then
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
