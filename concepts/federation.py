"""Federation: a mind's read-only subscriptions to other minds (ADR 0019).

A mind may subscribe to another mind of the same store or of another store
(by URL); its recall then asks that peer too, read-only, and discounts what the
peer returns by how far the mind trusts it: a Beta posterior per peer, prior
Beta(5, 5), moved by feedback on the peer's results (``noema.memory.recall.federation``
holds the arithmetic).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from concepts.models import UtcDatetime

#: The prior of every peer's trust posterior: Beta(5, 5), a mean of 0.5 held loosely.
PEER_PRIOR_ALPHA = 5.0
PEER_PRIOR_BETA = 5.0
#: What a subscription's name may be: a letter, digit or underscore first, then up
#: to 63 of those, dots and dashes (as a world's name).
PEER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


class Peer(BaseModel):
    """One subscription of a mind to a peer mind, and the mind's trust in that peer.

    Attributes:
        name: the subscription's name, unique within the subscribing mind.
        url: the store the peer lives in; ``None``: the subscriber's own store.
        mind: the peer mind's name in that store.
        alpha: successes of the trust posterior Beta(alpha, beta), the prior included.
        beta: failures of the trust posterior, the prior included.
        created_at: when the mind subscribed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Annotated[str, Field(pattern=f"^{PEER_NAME.pattern}$")]
    url: Annotated[str, Field(min_length=1, max_length=2_000)] | None = None
    mind: Annotated[str, Field(min_length=1, max_length=100)]
    alpha: float = Field(default=PEER_PRIOR_ALPHA, gt=0.0, allow_inf_nan=False)
    beta: float = Field(default=PEER_PRIOR_BETA, gt=0.0, allow_inf_nan=False)
    created_at: UtcDatetime

    @property
    def trust_mean(self) -> float:
        """The posterior's mean, ``alpha / (alpha + beta)`` (its 10th percentile discounts)."""
        return self.alpha / (self.alpha + self.beta)
