-- Sliding counter: the key holds the index of the window it counted in last
-- and the counts of that window (cur) and of the one before (prev). A request
-- at offset e into its window sees floor(prev * (window - e) / window) + cur.
local idx = fdiv(now, window)
-- counts above the limit, or below zero, are not this Config's (see load),
-- nor a window that starts beyond exact: no clock it reads gets there
local si, sp, sc = load(3, function(i, p, c)
  return p >= 0 and p <= limit and c >= 0 and c <= limit and not inexact(i * window)
end)
local held, index, prev, cur, e, est

-- view sets the state as a request at now sees it from the stored one (si,
-- sp, sc): the same window keeps the counts, the next moves cur to prev,
-- later ones start at zero, and an earlier one (a clock that stepped back)
-- keeps the stored window, at its start. Counts that refunds took to zero
-- are a fresh key's, whatever their window.
local function view()
  held = si ~= nil and (sp > 0 or sc > 0)
  index, prev, cur, e = idx, 0, 0, now - idx * window
  if held then
    if idx == si + 1 then
      prev = sc
    elseif idx == si then
      prev, cur = sp, sc
    elseif idx < si then
      index, prev, cur, e = si, sp, sc, 0
    end
  end
  est = fdiv(prev * (window - e), window) + cur
end
view()
if atNow then
  -- a take now counts in the window view chose, later than now's when the
  -- clock stepped back, and is stamped with its start (see taken below):
  -- requests taken now go back there
  at = math.max(now, index * window)
end

-- untilAt returns the least wait from now after which the stored state
-- (si, sp, sc) estimates at most t: the estimate only falls as time passes,
-- and is zero two windows after the stored one.
local function untilAt(t)
  if not held then
    return 0
  end
  local w0 = si * window -- the stored window's start
  local from = math.max(now, w0) -- before w0 the estimate is sp + sc
  if from < w0 + window and sc <= t then
    local e0 = from - w0
    local need = e0
    if sp > 0 then
      need = math.max(e0, window - fdiv((t - sc + 1) * window - 1, sp))
    end
    if need < window then
      return w0 + need - now
    end
  end
  local w1 = w0 + window
  from = math.max(now, w1)
  if from < w1 + window then
    local need = from - w1
    if sc > 0 then
      need = math.max(need, window - fdiv((t + 1) * window - 1, sc))
    end
    if need < window then
      return w1 + need - now
    end
  end
  return math.max(w1 + window - now, 0)
end

local allowed, retry, got = 0, 0, 0
if giveback > 0 then
  -- off the count of the window they counted in, the stored one (sc) or
  -- the one before it (sp), while now is less than two windows after it;
  -- the stored window stays
  local ai = fdiv(at, window)
  if counted(held, at) and idx - ai < 2 and (ai == si or ai == si - 1) then
    if ai == si then
      sc = math.max(sc - giveback, 0)
    else
      sp = math.max(sp - giveback, 0)
    end
    save((si + 2) * window - now, si, sp, sc)
    view()
  end
elseif n == 0 then
  allowed = 1
elseif n < 0 or n > limit then
  retry = -1
elseif est + n <= limit then
  allowed = 1
  cur = cur + n
  est = est + n
  si, sp, sc, held = index, prev, cur, true
  took()
  save((si + 2) * window - now, si, sp, sc)
else
  retry = untilAt(limit - n)
end
-- requests counted in a window later than now's (a clock that stepped back)
-- are taken at its start, which their give back names
local taken = now
if allowed == 1 and n > 0 and idx < index then
  taken = index * window
end
return {allowed, math.max(limit - est, 0), retry, untilAt(0), got, taken}
