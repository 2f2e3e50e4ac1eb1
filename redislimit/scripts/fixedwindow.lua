-- Fixed window: windows aligned on the clock's origin; the key holds the
-- index of the window it counted in last and its count. A later window
-- starts at zero; the same or an earlier one (a clock that stepped back)
-- counts against the stored window. A count that refunds took to zero is a
-- fresh key's, whatever its window.
local idx = fdiv(now, window)
-- a count above the limit, or below zero, is not this Config's (see load),
-- nor a window that starts beyond exact, either way: no clock it reads gets
-- there (and the TTL of a window so far ahead would not fit SET's)
local index, count = load(2)
if index and not (count >= 0 and count <= limit and index * window < exact and index * window > -exact) then
  index, count, born = nil, nil, int(now)
end
local held = index ~= nil and count > 0
if not held or idx > index then
  index, count = idx, 0
end
local finish = (index + 1) * window - now -- until the counted window ends
if atNow then
  -- a take now counts in the key's window, later than now's when the
  -- clock stepped back, and is stamped with its start (see taken below):
  -- requests taken now go back there
  at = math.max(now, index * window)
end

local allowed, retry, got = 0, 0, 0
if giveback > 0 then
  -- only while the window they counted in is the key's
  if counted(held, at) and fdiv(at, window) == index and count > 0 then
    count = math.max(count - giveback, 0)
    save(finish, index, count)
  end
end
-- then n, as the key stands once the give back is in: a take that
-- carries a lease's leftovers (see prelude.lua) sees them returned
if n == 0 then
  allowed = 1
elseif n < 0 or n > limit then
  retry = -1
elseif count + n <= limit then
  allowed = 1
  count = count + n
  got = math.min(extra, limit - count)
  count = count + got
  took()
  save(finish, index, count)
else
  retry = finish
end

local reset = 0
if count > 0 then
  reset = finish
end
-- requests counted in a window later than now's (a clock that stepped back)
-- are taken at its start, which their give back names
local taken = now
if allowed == 1 and n > 0 and idx < index then
  taken = index * window
end
return {allowed, limit - count, retry, reset, got, taken}
