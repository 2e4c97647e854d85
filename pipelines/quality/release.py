"""How an operator releases a batch a quality gate stopped (``auditlake refresh --release``). No
imports beyond the standard library: the command line's grammar reads these names."""

from __future__ import annotations

# its rows set aside to quarantine (reason gate_stopped), nothing of it promoted
RELEASE_QUARANTINE = "quarantine"
# promoted with the share thresholds waived for it: the operator judged the feed sound
RELEASE_PROMOTE = "promote"
RELEASES = (RELEASE_QUARANTINE, RELEASE_PROMOTE)
