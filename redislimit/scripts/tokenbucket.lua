-- Token bucket, exact: s is the key's tokens times window, which grows by
-- limit per tick up to cap = burst * window. A fresh key is full. A clock
-- behind the key's last time refills nothing. Only a change is stored.
local cap = burst * window
-- a state of more tokens than the burst, or fewer than none, is not this
-- Config's (see load)
local s, last = load(2)
if s and not (s >= 0 and s <= cap) then
  s, last, born = nil, nil, int(now)
end
local held = s ~= nil
if not held then
  s, last = cap, now
elseif now > last then
  local el = now - last
  if el >= cdiv(cap - s, limit) then
    s = cap
  else
    s = s + el * limit
  end
  last = now
end
-- a clock behind the key's last time: nothing refills until it is back there,
-- so every wait starts then
local behind = math.max(last - now, 0)

local allowed, retry, got = 0, 0, 0
if giveback > 0 then
  -- the tokens less what the key refilled from their take up to last, the
  -- later of now and its latest write (it is refilled up to that write, so
  -- that refill is real): had they not been taken, those refills would have
  -- been capped. A clock behind at, on a key not written since, refilled
  -- nothing: all of them come back. (The product is computed only below
  -- back, so it is exact; an at far outside the clock's range, which only a
  -- made-up receipt holds, is far behind last or ahead of it either way.)
  local back = giveback * window
  if last > at then
    if last - at >= cdiv(back, limit) then
      back = 0
    else
      back = back - (last - at) * limit
    end
  end
  if counted(held, at) and back > 0 then
    s = math.min(cap, s + back)
    save(behind + cdiv(cap - s, limit), s, last)
  end
end
-- then n, as the key stands once the give back is in: a take that
-- carries a lease's leftovers (see prelude.lua) sees them returned
if n == 0 then
  allowed = 1
elseif n < 0 or n > burst then
  retry = -1
elseif s >= n * window then
  allowed = 1
  s = s - n * window
  got = math.min(extra, fdiv(s, window))
  s = s - got * window
  took()
  save(behind + cdiv(cap - s, limit), s, last)
else
  retry = behind + cdiv(n * window - s, limit)
end

local remaining, reset = 0, 0
if s > 0 then
  remaining = fdiv(s, window)
end
if s < cap then
  reset = behind + cdiv(cap - s, limit)
end
return {allowed, remaining, retry, reset, got, now}
