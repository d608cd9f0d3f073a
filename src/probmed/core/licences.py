"""Image licences as the sources state them, and which rows allow commercial use.

Every ImageRecord, question row and original-format record carries its image's
licence, so a user can drop the non-commercial rows (``commercial_only`` of a
question set, or :func:`commercial_use`) before shipping anything built on them.
"""

from __future__ import annotations

import re

# Licences of the sources whose files carry none per image (../shared/data/SOURCES.md).
CHESTXRAY14 = "NIH ChestX-ray14: no restrictions on use (cite Wang et al. 2017)"
VQARAD = "CC0 1.0"
MEDICAT = "MedICaT: research and non-commercial use only"

_NON_COMMERCIAL = re.compile(r"(?<![a-z])nc(?![a-z])|non-?commercial", re.IGNORECASE)


def commercial_use(licence: str | None) -> bool:
    """False for a non-commercial licence (CC BY-NC, BY-NC-SA, "non-commercial use only") or none stated."""
    if not licence or not str(licence).strip():
        return False
    return not _NON_COMMERCIAL.search(str(licence))
