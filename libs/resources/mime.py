"""MIME multipart messages of text parts, as cloud-init reads them (a server's user_data, MultipartMime).

Built with the standard library's email package, as Heat builds them, so the bytes are
Heat's: a part that is not ASCII is UTF-8 in base64. Heat's boundary is random; Ember's is
derived from the parts, so the same parts always give the same message (a step run again
asks for the same server, a config stored again is the same config).
"""

from __future__ import annotations

import email
import hashlib
import json
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from typing import NamedTuple


class Part(NamedTuple):
    payload: str
    filename: str
    subtype: str


def parts_of(message: str) -> list[Part]:
    """The text parts of a multipart message; a text that is no multipart message has none."""
    parsed = email.message_from_string(message)
    if not parsed.is_multipart():
        return []
    return [Part(str(p.get_payload()), p.get_filename() or "", p.get_content_subtype())
            for p in parsed.walk() if not p.is_multipart()]


def multipart(parts: list[Part]) -> str:
    """The message of ``parts``; a part's empty subtype is ``plain``."""
    digest = hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]
    message = MIMEMultipart(boundary=f"===============ember{digest}==")
    for payload, filename, subtype in parts:
        try:
            payload.encode("us-ascii")
            charset = "us-ascii"
        except UnicodeEncodeError:
            charset = "utf-8"
        text = MIMEText(payload, _subtype=subtype or "plain", _charset=charset)
        if filename:
            text.add_header("Content-Disposition", "attachment", filename=filename)
        message.attach(text)
    return message.as_string()
