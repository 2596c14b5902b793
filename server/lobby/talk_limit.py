"""How fast players may talk. Every tell, say and shout is pushed to someone (a shout to
everyone), so each is counted twice, per player and per address (an IPv6 /64), with the
token buckets successful logins are counted with (:class:`server.limits.LoginRate`): one
account cannot flood, nor many accounts from one place. Shouts have allowances of their own.
In memory, per server process, as the invitation limit is.
"""

from __future__ import annotations

import math

from server.config import Limits
from server.limits import LoginRate, client_key
from server.lobby.call import fail


class TalkLimit:
    def __init__(self, limits: Limits) -> None:
        self.talk = LoginRate(limits.talk_per_minute, limits.talk_address_per_minute)
        self.shouts = LoginRate(limits.shouts_per_minute, limits.shouts_address_per_minute)

    def take(self, player: str, address: str, shout: bool = False) -> None:
        """Count one message of ``player`` (a case-folded name) from ``address``, or refuse it
        with ``rate_limited`` (then nothing is counted)."""
        rate = self.shouts if shout else self.talk
        wait = rate.take(player, client_key(address))
        if wait > 0:
            what = "shouting" if shout else "talking"
            raise fail("rate_limited", f"You are {what} too fast; try again in "
                                       f"{math.ceil(wait)} s.")
