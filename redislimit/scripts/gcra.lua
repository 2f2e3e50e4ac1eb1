-- GCRA, exact: the key's tokens times window are a line, s at tick last,
-- rising by limit per tick, read capped at cap = burst * window. A fresh key
-- is full. A clock behind last judges the key at that earlier time, on the
-- same line: it removes tokens, never adds any. Far behind, the tokens there
-- (s - behind * limit) are beyond what a double holds exactly, so they are
-- never computed: every test and wait below is made from s and behind.
local cap = burst * window
-- a state of more tokens than the burst is not this Config's (see load),
-- nor one of fewer than none, unless by less than a tick's refill: a give
-- back with the clock behind keeps the line at a tick where it reads at
-- most cap, which is below zero when limit > cap
local s, last = load(2)
if s and not (s <= cap and (s >= 0 or s > cap - limit)) then
  s, last, born = nil, nil, int(now)
end
local held = s ~= nil
local behind = 0
if not held then
  s, last = cap, now
elseif now >= last then
  local el = now - last
  if el >= cdiv(cap - s, limit) then
    s = cap
  else
    s = s + el * limit
  end
  last = now
else
  behind = last - now
end

-- Written out below, where they are needed, rather than made as functions
-- on every call:
--   has(x), whether the key holds at least x <= cap now
--   (s - behind * limit >= x): s >= x and (behind == 0 or behind <=
--   fdiv(s - x, limit)), since fdiv(s - x, limit) >= 0 when s >= x: a clock
--   that is not behind divides nothing
--   untilHas(x), the ticks until the key holds x <= cap, when it holds less
--   now: behind + cdiv(x - s, limit)
--   tokens, what the key holds now, when has(x) for an x >= 0 (exact):
--   math.min(cap, s - behind * limit)

local allowed, retry, got = 0, 0, 0
if giveback > 0 then
  -- the tokens less what has refilled since they were taken: had they not
  -- been taken, those refills would have been capped
  local back = giveback * window
  if now > at then
    if now - at >= cdiv(back, limit) then
      back = 0
    else
      back = back - (now - at) * limit
    end
  end
  if counted(held, at) and back > 0 and not (s >= cap and (behind == 0 or behind <= fdiv(s - cap, limit))) then
    if s >= cap - back and (behind == 0 or behind <= fdiv(s - (cap - back), limit)) then
      s, last, behind = cap, now, 0
    else
      -- the line rises by back; kept at the latest tick from now to last
      -- where it reads at most cap, so that s stays exact
      s = s + back
      if s > cap then
        local k = cdiv(s - cap, limit)
        s, last = s - k * limit, last - k
        behind = last - now
      end
    end
    save(behind + cdiv(cap - s, limit), s, last)
  end
end
-- then n, as the key stands once the give back is in: a take that
-- carries a lease's leftovers (see prelude.lua) sees them returned
if n == 0 then
  allowed = 1
elseif n < 0 or n > burst then
  retry = -1
elseif s >= n * window and (behind == 0 or behind <= fdiv(s - n * window, limit)) then
  allowed = 1
  s = math.min(cap, s - behind * limit) - n * window
  got = math.min(extra, fdiv(s, window))
  s = s - got * window
  last, behind = now, 0
  took()
  save(cdiv(cap - s, limit), s, last)
else
  retry = behind + cdiv(n * window - s, limit)
end

local remaining, reset = 0, 0
if s >= window and (behind == 0 or behind <= fdiv(s - window, limit)) then
  remaining = fdiv(math.min(cap, s - behind * limit), window)
end
if not (s >= cap and (behind == 0 or behind <= fdiv(s - cap, limit))) then
  reset = behind + cdiv(cap - s, limit)
end
return {allowed, remaining, retry, reset, got, now}
