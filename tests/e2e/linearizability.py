"""A linearizability checker for S3 keys, each a register: Wing and Gong's search with Lowe's
memoization, one key at a time (a history of independent keys is linearizable when each key's
is).

An operation is a dict:
  kind:   "put" | "delete" | "get" | "put_if_match" | "put_if_none"
  value:  the value a put writes (unique per put), or the value a get read (None: no object)
  expect: for put_if_match, the value whose ETag the request named
  ok:     for conditional puts, True when the write was accepted, False when refused (412)
  call, ret: monotonic times; ret is None for an operation whose outcome is unknown (the
          connection failed): it may have taken effect at any moment after its call (within
          `lost_window` seconds, when one is given), or never.
  client, node: who asked, through which node (for reports).

Operations the server answered with an error that takes no effect (503, 409) are left out by
the caller: they did not change the register.
"""

INF = float("inf")


def step(op, state):
    """Applies `op` to the register `state`; answers (allowed, new state)."""
    kind = op["kind"]
    if kind == "put":
        return True, op["value"]
    if kind == "delete":
        return True, None
    if kind == "get":
        return op["value"] == state, state
    if kind == "put_if_match":
        if op["ok"]:
            return state == op["expect"], op["value"]
        return state != op["expect"], state
    if kind == "put_if_none":
        if op["ok"]:
            return state is None, op["value"]
        return state is not None, state
    raise ValueError(f"unknown operation {kind}")


def check_key(ops, initial=None, lost_window=None):
    """Whether `ops` (one key's) are linearizable from `initial`. Answers (True, None) or
    (False, report) where the report names the operations no order could place.

    `lost_window` bounds when an operation whose answer was lost may take effect (seconds
    after its call). Without it such an operation stays open to the end of the history, and
    the search grows with every one of them that overlaps another."""
    ops = sorted(ops, key=lambda o: o["call"])
    unbounded = INF if lost_window is None else None
    rets = [(unbounded or o["call"] + lost_window) if o["ret"] is None else o["ret"] for o in ops]
    determinate = [o["ret"] is not None for o in ops]
    n = len(ops)
    full = (1 << n) - 1
    memo = set()
    best = [full]  # the fewest operations left over at a dead end: what the report shows

    # Iterative depth-first search over (operations left, register state).
    stack = [(full, initial)]
    while stack:
        left, state = stack.pop()
        if (left, state) in memo:
            continue
        memo.add((left, state))
        if not any(determinate[i] for i in range(n) if left >> i & 1):
            return True, None  # what is left may never have happened
        if bin(left).count("1") < bin(best[0]).count("1"):
            best[0] = left
        horizon = min(rets[i] for i in range(n) if left >> i & 1)
        for i in range(n):
            if not left >> i & 1:
                continue
            if ops[i]["call"] > horizon:
                break  # ops are in call order: none later can go first
            allowed, after = step(ops[i], state)
            if allowed:
                stack.append((left & ~(1 << i), after))
            if not determinate[i]:
                # An operation whose answer was lost may never have taken effect.
                stack.append((left & ~(1 << i), state))
    stuck = [ops[i] for i in range(n) if best[0] >> i & 1][:12]
    return False, stuck


def check(history, lost_window=None):
    """Checks every key of `history` ({key: [op, ...]}); answers a list of (key, report) for the
    keys that are not linearizable."""
    failures = []
    for key, ops in history.items():
        ok, report = check_key(ops, lost_window=lost_window)
        if not ok:
            failures.append((key, report))
    return failures


def describe(op, start):
    """One line for a report: when, who, through which node, what, and the answer."""
    ret = "lost" if op["ret"] is None else f"{op['ret'] - start:8.3f}"
    what = op["kind"]
    if what in ("put", "put_if_match", "put_if_none"):
        what += f" {op['value']!r}"
    if what.startswith("put_if_match"):
        what += f" if-match {op['expect']!r}"
    if "ok" in op:
        what += " accepted" if op["ok"] else " refused"
    if op["kind"] == "get":
        what += f" -> {op['value']!r}"
    return f"[{op['call'] - start:8.3f} .. {ret}] client {op['client']} via node {op['node']}: {what}"
