"""The login throttle's and the registration limit's rules, on a clock the test sets.

Their effect on a running server (concurrent guesses, spraying, lockout, floods) is
in tests/hardening/test_login_limits.py; here each rule is checked at its edges.
"""

from __future__ import annotations

import pytest

from server.limits import (
    MAX_RECORDS,
    Backoff,
    LoginThrottle,
    RegistrationLimit,
    Throttled,
    client_key,
)


def guess(throttle: LoginThrottle, account: str, address: str, now: float) -> str:
    """A wrong password: ``checked`` when the throttle let it through, else ``throttled``."""
    try:
        throttle.begin(account, address, now)
    except Throttled:
        return "throttled"
    return "checked"


def test_a_pair_gets_its_free_failures_then_waits_doubling_up_to_the_cap() -> None:
    t = LoginThrottle(per_pair=3, per_address=100, per_account=100, base=1.0, cap=4.0)
    assert [guess(t, "bob", "a", 0.0) for _ in range(4)] == ["checked"] * 3 + ["throttled"]
    assert t.wait_for("bob", "a", 0.0) == 1.0
    assert guess(t, "bob", "a", 1.0) == "checked"  # the 4th failure: now 2 s
    assert t.wait_for("bob", "a", 1.0) == 2.0
    assert guess(t, "bob", "a", 3.0) == "checked"  # the 5th: 4 s
    assert guess(t, "bob", "a", 7.0) == "checked"  # the 6th: 8 s, capped at 4
    assert t.wait_for("bob", "a", 7.0) == 4.0
    # nothing for ``forget`` seconds: a fresh start
    assert t.wait_for("bob", "a", 7.0 + 901) == 0.0
    assert [guess(t, "bob", "a", 2000.0) for _ in range(4)] == ["checked"] * 3 + ["throttled"]


def test_a_refused_attempt_counts_nothing() -> None:
    t = LoginThrottle(per_pair=2, per_address=100, per_account=100)
    for _ in range(10):
        guess(t, "bob", "a", 0.0)
    assert t.pairs.count(("bob", "a")) == 2
    assert t.addresses.count("a") == 2 and t.accounts.count("bob") == 2


def test_a_success_clears_its_pair_and_takes_back_only_its_own_count() -> None:
    t = LoginThrottle(per_pair=5, per_address=7, per_account=100)
    for account in ("v1", "v2"):
        for _ in range(3):
            guess(t, account, "a", 0.0)
    own = t.begin("me", "a", 0.0)
    t.succeeded(own)
    assert t.addresses.count("a") == 6  # the six failures stay: spraying is not forgiven
    assert t.pairs.count(("me", "a")) == 0
    assert guess(t, "v3", "a", 0.0) == "checked"  # the seventh
    assert guess(t, "v3", "a", 0.0) == "throttled"
    assert t.trusted("me", "a", 0.0)
    assert guess(t, "me", "a", 0.0) == "checked"  # its own account: only its own pair applies


def test_a_trusted_address_is_held_only_by_its_own_failures() -> None:
    t = LoginThrottle(per_pair=5, per_address=100, per_account=3)
    t.trust("boss", "home", 0.0)
    for address in ("x1", "x2", "x3"):
        assert guess(t, "boss", address, 0.0) == "checked"
    assert guess(t, "boss", "x4", 0.0) == "throttled"  # the account's limit, for new addresses
    assert t.wait_for("boss", "home", 0.0) == 0.0  # not for the owner's
    assert [guess(t, "boss", "home", 0.0) for _ in range(6)] == ["checked"] * 5 + ["throttled"]
    assert t.accounts.count("boss") == 3  # the owner's typos do not count for the account


def test_trust_is_forgotten_after_remember_seconds() -> None:
    t = LoginThrottle(remember=100.0)
    t.trust("boss", "home", 0.0)
    assert t.trusted("boss", "home", 100.0)
    assert not t.trusted("boss", "home", 100.5)
    assert not t.trusted("boss", "elsewhere", 0.0)


def test_a_cancelled_attempt_is_undone() -> None:
    t = LoginThrottle(per_pair=1, per_address=1, per_account=1)
    attempt = t.begin("bob", "a", 0.0)
    assert guess(t, "bob", "a", 0.0) == "throttled"
    t.cancelled(attempt)
    assert (len(t.pairs), len(t.addresses), len(t.accounts)) == (0, 0, 0)
    assert guess(t, "bob", "a", 0.0) == "checked"


def test_a_full_table_drops_stale_records_then_the_oldest() -> None:
    b: Backoff[str] = Backoff(free=5, base=1.0, cap=300.0, forget=900.0)
    for i in range(MAX_RECORDS):
        b.add(f"k{i}", 0.0 if i < 10 else 1000.0)  # ten of them stale by t = 1000
    b.add("new", 1000.0)
    assert len(b) == MAX_RECORDS - 9 and b.count("k0") == 0 and b.count("new") == 1
    for i in range(10):  # full of live records: the older half goes
        b.add(f"more{i}", 1000.0 + i)
    assert len(b) <= MAX_RECORDS // 2 + 10
    assert b.count("more9") == 1


def test_registrations_per_hour_per_address() -> None:
    limit = RegistrationLimit(per_hour=3)
    assert [limit.take("a", 0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limit.take("a", 0.0) == pytest.approx(1200.0)  # one comes back every 20 minutes
    assert limit.take("b", 0.0) == 0.0
    assert limit.take("a", 1200.0) == 0.0
    limit.give_back("a")
    assert limit.take("a", 1200.0) == 0.0
    assert limit.take("a", 1200.0) > 0
    unlimited = RegistrationLimit(per_hour=0)
    assert all(unlimited.take("a", 0.0) == 0.0 for _ in range(1000))


@pytest.mark.parametrize(("address", "key"), [
    ("203.0.113.7", "203.0.113.7"),
    ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"),
    ("::ffff:203.0.113.7", "203.0.113.7"),
    ("?", "?"),
])
def test_an_ipv6_client_is_counted_by_its_network(address: str, key: str) -> None:
    assert client_key(address) == key
