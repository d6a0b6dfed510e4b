"""The NATS client's failures, as the code outside ``libs.messaging`` tells them apart.

Only ``libs.messaging`` talks to the client; what others must know of its errors
(is the bus down? did a publish fail?) is named here.
"""

from __future__ import annotations

from typing import Final

import nats.errors
import nats.js.errors

# Every failure the client raises: the bus failing, which retrying outlasts.
BUS_ERROR: Final = nats.errors.Error
# The client is reconnecting or closed, or JetStream did not answer in time.
BUS_DOWN: Final = (nats.errors.ConnectionClosedError, nats.errors.ConnectionReconnectingError,
                   nats.errors.NoServersError, nats.errors.StaleConnectionError,
                   nats.errors.OutboundBufferLimitError, nats.errors.TimeoutError,
                   nats.errors.NoRespondersError, nats.js.errors.ServiceUnavailableError)
