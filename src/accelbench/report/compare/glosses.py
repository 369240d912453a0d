"""English glosses of the tutorials' sources quoted as printed (Greek, Spanish): a reader sees
the original, for searching the source, and what it says."""
from __future__ import annotations

import re

# phrase as printed -> its English; longer phrases first, so a part never replaces a whole
PHRASES: tuple[tuple[str, str], ...] = (
    ("Πειραματική επαλήθευση", "Experimental verification"),
    ("Εκτελέστε κώδικα που χρησιμοποιεί υπολογιστές CPU", "Run code that uses the CPU"),
    ("Χρήση κάρτας γραφικών", "Using the graphics card"),
    ("βήμα 5 Κάντε 10 προβλέψεις", "step 5, make 10 predictions"),
    ("Έτρεξε σε", "Ran in"),
    ("δευτερόλεπτα", "seconds"),
    ("Ejemplo clásico de reconocimiento de imágenes MNIST", "Classic example: recognising MNIST images"),
)
_DECIMAL_COMMA = re.compile(r"(\d),(\d)")  # "4,2369 δευτερόλεπτα": a decimal comma, in English a point


def gloss(text: str) -> str | None:
    """`text` in English where it holds a known foreign phrase; None where it needs none."""
    english = text
    for phrase, meaning in PHRASES:
        english = english.replace(phrase, meaning)
    if english == text:
        return None
    return _DECIMAL_COMMA.sub(r"\1.\2", english) if "seconds" in english else english
