"""Deterministic entity extraction for recall's graph lane.

The write path extracts entities from every memory's content ("deterministic
entity extraction at write time (names, quoted strings, codes and identifiers,
dates) into entity nodes linked by ``refers_to``"), and recall extracts them from
the query. Memories that share an entity with the query are graph-lane hits
(docs/architecture.md, "Recall": the graph lane follows ``refers_to`` / ``same_as``
edges from memories that match the query's entities). Both sides must therefore
produce the same key for the same thing, with no model, no network and no
randomness: the function below is pure and depends on the text alone.

An entity key is a type prefix and a normalised (casefolded, whitespace-folded)
value:

- ``name:`` proper names, i.e. capitalised words and runs of them
  (``name:new york``). A run also yields each of its words, so "Caroline" finds a
  memory about "Caroline Smith". Capitals that only mark the start of a sentence
  are not names: common sentence-starting and function words never are, and a
  sentence-initial word that the same text also uses in lower case is skipped.
  Weekday and month names go to dates instead.
- ``quote:`` text between double quotes, titles and exact phrases.
- ``code:`` identifiers: tickets (``INC-4411``), versions (``v2.3.1``), names
  from code (``user_id``, ``foo.bar``), references (``#1234``), URLs, e-mail
  addresses and all-caps acronyms (``LGBTQ``). Numbers, numbers with a unit or
  ordinal (``3pm``, ``4th``) and plain or hyphenated English words are not codes.
- ``date:`` calendar dates as ``YYYY-MM-DD``, ``YYYY-MM`` or ``YYYY``, whatever the
  written form (``2023-05-08``, ``8 May 2023``, ``May 8, 2023``, ``May 2023``,
  ``in 2022``), so differently written mentions of one day meet.

Only the first ``MAX_TEXT`` characters are read and at most ``MAX_ENTITIES`` keys
are returned, so one huge memory costs little and cannot flood the graph.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["MAX_ENTITIES", "extract_entities"]

#: Most keys returned for one text.
MAX_ENTITIES = 32
#: Only this many leading characters of a text are scanned.
MAX_TEXT = 20_000
#: Longest quoted text (after folding whitespace) that becomes a ``quote:`` key.
MAX_QUOTE = 80
#: Longest all-caps word that counts as an acronym.
MAX_ACRONYM = 10
#: Most words in one multi-word name; a longer capitalised run (a title-case
#: headline) yields its words alone.
MAX_NAME_WORDS = 5
#: Longest key; a longer "entity" (a run-on token, a huge URL) is noise to the graph.
MAX_KEY = 200

#: Capitalised words that are never names: sentence starters, function words,
#: interjections, titles and a few imperatives common at the head of agent notes.
COMMON_WORDS = frozenset({
    "a", "about", "absolutely", "actually", "add", "after", "again", "against", "all",
    "also", "although", "always", "am", "amazing", "an", "and", "another", "any", "anyway",
    "are", "as", "ask", "at", "awesome", "be", "because", "been", "before", "being", "both",
    "but", "by", "bye", "call", "can", "check", "congrats", "congratulations", "cool",
    "could", "create", "dear", "definitely", "delete", "deploy", "did", "do", "does",
    "done", "during", "each", "either", "even", "every", "everyone", "everything",
    "exactly", "fix", "finally", "first", "for", "from", "get", "glad", "go", "good",
    "great", "had", "has", "have", "he", "hello", "her", "here", "hers", "hey", "hi", "him",
    "his", "how", "however", "i", "if", "in", "indeed", "install", "into", "is", "it",
    "its", "just", "last", "let", "lol", "love", "make", "many", "maybe", "me", "might",
    "mine", "more", "most", "much", "must", "my", "myself", "next", "nice", "no", "nobody",
    "none", "nor", "not", "note", "nothing", "now", "of", "off", "oh", "ok", "okay", "omg",
    "on", "once", "one", "only", "or", "other", "our", "ours", "out", "over", "perhaps",
    "please", "really", "recently", "remember", "remove", "run", "same", "second", "see",
    "she", "should", "since", "so", "some", "something", "sometimes", "sorry", "sounds",
    "still", "such", "sure", "take", "thank", "thanks", "that", "the", "their", "theirs",
    "them", "then", "there", "these", "they", "this", "those", "though", "through", "to",
    "today", "tomorrow", "tonight", "too", "totally", "try", "under", "until", "up",
    "update", "us", "use", "very", "was", "we", "well", "were", "what", "whatever", "when",
    "where", "whether", "which", "while", "who", "whom", "whose", "why", "will", "with",
    "without", "wow", "would", "yeah", "yes", "yesterday", "yet", "you", "your", "yours",
    "mr", "mrs", "ms", "dr", "sir", "madam", "st", "hmm", "haha", "lmao", "btw",
    "fyi"
})  # fmt: skip

#: Month and weekday names and their abbreviations: dates, never names.
CALENDAR_WORDS = frozenset({
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug",
    "sep", "sept", "oct", "nov", "dec", "monday", "tuesday", "wednesday", "thursday",
    "friday", "saturday", "sunday", "mon", "tue", "tues", "wed", "thu", "thur", "thurs",
    "fri", "sat", "sun"
})  # fmt: skip

#: All-caps words that are shouted words ("OMG", "MAY"), not acronyms.
_NOT_ACRONYMS = COMMON_WORDS | CALENDAR_WORDS
_MONTH_NUMBER = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}
_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_SPACE = r"[^\S\r\n]+"  # horizontal whitespace: a date never spans lines


def _month(group: str) -> str:
    return (
        rf"(?P<{group}>(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?"
        r"|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?))"
        r"(?![^\W\d_])\.?"
    )


def _day(group: str) -> str:
    return rf"(?P<{group}>[0-9]{{1,2}})(?i:st|nd|rd|th)?"


def _year(group: str) -> str:
    return rf"(?P<{group}>[0-9]{{4}})(?!\w)"


_DATE = re.compile(
    # Every form starts a word with a digit or a month's initial: the lookaheads
    # turn most positions away before a whole form is tried.
    r"(?<!\w)(?:(?=[0-9])(?:"
    # 2023-05-08
    r"(?P<iso>(?<![.-])(?P<iy>[0-9]{4})-(?P<im>[0-9]{2})-(?P<id>[0-9]{2})(?![\w-]|\.[0-9]))"
    # 8 May 2023, 8th of May, 2023
    rf"|(?P<dmy>(?<!\.){_day('dd1')}{_SPACE}(?:(?i:of){_SPACE})?{_month('mm1')},?"
    rf"{_SPACE}{_year('yy1')})"
    # in 2022 (but not 2022-23, $2022, 2022%, v.2022 or 12/2022)
    r"|(?P<alone>(?<![.,#/:$£€+-])(?:19|20)[0-9]{2}(?![\w%]|[.,:/-][0-9]))"
    # May 8, 2023; May 2023
    rf")|(?=[JFMASONDjfmasond])(?P<mdy>{_month('mm2')}(?:{_SPACE}{_day('dd2')})?,?"
    rf"{_SPACE}{_year('yy2')}))"
)
_LINK = re.compile(
    r"(?<![\w.+-])(?:(?:https?://|www\.)[^\s<>\"“”'‘’]+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+)"
)
#: A word-like token, except a plain lower-case ASCII word: most of any text, and
#: never an entity, so the scan skips it without a Python-level step.
_TOKEN = re.compile(r"(?<![\w#@])(?![a-z]+(?![\w'’]|[-./#]\w))[#@]?\w+(?:[-./#'’]\w+)*")
_QUOTE = re.compile(r"[\"“”]([^\"“”\n]*)[\"“”]")
_DIGIT = re.compile(r"[0-9]")
_WORD = re.compile(r"[^\W\d_]+")
_LETTER = re.compile(r"[^\W\d_]")
_PART = re.compile(r"[-./#]")
_NAME_PART = re.compile(r"['’-]")
#: A number with a unit or an ordinal suffix: a quantity, not an identifier.
_QUANTITY = re.compile(
    r"[0-9]+(?:\.[0-9]+)?(?:st|nd|rd|th|s|am|pm|[kmbgldhx]|kg|mg|km|cm|mm|ml|lbs?|oz|ft"
    r"|mi|mph|hrs?|mins?|secs?|yrs?|mo|[kmgt]b|px)",
    re.IGNORECASE,
)
#: Characters that may sit between a sentence break and the word that opens it.
_OPENERS = frozenset(" \t\xa0\"“”'‘’([{*•>-")
_SENTENCE_BREAKS = frozenset(".!?:\n\r…")
_URL_TRAIL = ".,;:!?)]}"
#: Stands in for a URL or e-mail address once it is taken, so no later scan sees
#: inside it: neither a word, a space nor a sentence break.
_MASK = "\x01"


def extract_entities(text: str) -> list[str]:
    """Entity keys found in text, deduplicated, in first-seen order, at most MAX_ENTITIES.

    Args:
        text: Any string; only its first ``MAX_TEXT`` characters are read.

    Returns:
        Keys such as ``name:caroline``, ``quote:project falcon``,
        ``code:inc-4411`` or ``date:2023-05-08``, in the order their mentions start.
    """
    text = unicodedata.normalize("NFC", text[:MAX_TEXT])
    found: list[tuple[int, str]] = []
    if "@" in text or "://" in text or "www." in text:
        for match in _LINK.finditer(text):
            link = match.group().rstrip(_URL_TRAIL)
            found.append((match.start(), "code:" + link.casefold()))
        text = _LINK.sub(_mask, text)
    if _DIGIT.search(text) is not None:
        for match in _DATE.finditer(text):
            key = _date(match)
            if key is not None:
                found.append((match.start(), key))
    if '"' in text or "“" in text or "”" in text:
        for match in _QUOTE.finditer(text):
            quoted = " ".join(match.group(1).split())
            if 2 <= len(quoted) <= MAX_QUOTE:
                found.append((match.start(), "quote:" + quoted.casefold()))
    found.sort(key=_position)
    found = _merge(found, _scan_words(text))
    keys = dict.fromkeys(key for _, key in found if len(key) <= MAX_KEY)
    return list(keys)[:MAX_ENTITIES]


def _scan_words(text: str) -> list[tuple[int, str]]:
    """Names and codes of the word-like tokens of ``text``, in text order."""
    found: list[tuple[int, str]] = []
    run: list[str] = []
    run_start = run_end = 0
    run_open = False  # the next name word may extend the run
    lower_words: frozenset[str] | None = None
    for match in _TOKEN.finditer(text):
        start = match.start()
        token = match.group()
        if token.isdigit():  # the commonest token that is no entity: a number
            _emit_run(found, run, run_start)
            run = []
            run_open = False
            continue
        possessive = token[-2:] in ("'s", "’s") and len(token) > 2
        if possessive:
            token = token[:-2]
        word = _name_word(token)
        if word is None:
            _emit_run(found, run, run_start)
            run = []
            run_open = False
            key = _code(token)
            if key is not None:
                found.append((start, key))
            continue
        # Words of one name are apart by spaces alone; a lower-case word between
        # them is not a token but shows up here as text in the gap.
        if run_open and not text[run_end:start].strip(" \t\xa0"):
            run.append(word)
        else:
            _emit_run(found, run, run_start)
            run = []
            if _opens_sentence(text, start):
                if lower_words is None:
                    lower_words = _lowercase_words(text)
                if word in lower_words:
                    run_open = False
                    continue
            run = [word]
            run_start = start
        # A possessive closes the run: "Caroline's Mom" is two names.
        run_end = match.end()
        run_open = not possessive
    _emit_run(found, run, run_start)
    return found


def _merge(first: list[tuple[int, str]], second: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Two position-ordered lists as one; at equal positions ``first`` goes first."""
    if not first:
        return second
    if not second:
        return first
    return sorted(first + second, key=_position)


def _mask(match: re.Match[str]) -> str:
    link = match.group()
    kept = link.rstrip(_URL_TRAIL)
    return _MASK * len(kept) + link[len(kept) :]


def _position(entry: tuple[int, str]) -> int:
    return entry[0]


def _emit_run(found: list[tuple[int, str]], run: list[str], start: int) -> None:
    """Append a run of name words: the whole run first, then each word of it."""
    if 1 < len(run) <= MAX_NAME_WORDS:
        found.append((start, "name:" + " ".join(run)))
    for word in run:
        found.append((start, "name:" + word))


def _name_word(token: str) -> str | None:
    """The folded name ``token`` spells, or ``None`` when it is no name."""
    if token.isalpha():
        if not token[0].istitle() or len(token) < 2 or token.isupper():
            return None
        folded = token.casefold()
        if folded in COMMON_WORDS or folded in CALENDAR_WORDS:
            return None
        if token[-1] == "s" and len(token) > 2 and token[:-1].isupper():
            return None  # an acronym's plural ("APIs"): a code
        return folded
    # "Jean-Luc", "O'Brien": every part capitalised (so "Self-care" and "I'm" are not).
    parts = _NAME_PART.split(token)
    if len(parts) < 2:
        return None
    for part in parts:
        if not (part.isalpha() and part[0].istitle()):
            return None
    folded = token.replace("’", "'").casefold()
    return None if folded in COMMON_WORDS else folded


def _code(token: str) -> str | None:
    """The ``code:`` key of a word-like token, or ``None`` for numbers and plain words."""
    if token.isalpha():
        if token.isupper():
            folded = token.casefold()
            if 2 <= len(token) <= MAX_ACRONYM and folded not in _NOT_ACRONYMS:
                return "code:" + folded
        elif token[-1] == "s" and 3 <= len(token) <= MAX_ACRONYM + 1 and token[:-1].isupper():
            return "code:" + token[:-1].casefold()
        return None
    if token[0] in "#@":
        return "code:" + token.casefold() if token[1:].strip("_") else None
    if "'" in token or "’" in token or _LETTER.search(token) is None:
        return None  # contractions, numbers, number ranges and ISO-like digit runs
    folded = token.casefold()
    if "#" in token or "_" in token.strip("_"):
        return "code:" + folded
    parts = _PART.split(token)
    if _DIGIT.search(token) is not None:
        if len(parts) == 1:
            return None if _QUANTITY.fullmatch(token) else "code:" + folded
        # "20-year-old" and "top-10" are English; "INC-4411" and "v2.3.1" are codes.
        if "." not in token and "/" not in token:
            for part in parts:
                if not (part.isdigit() or (part.isalpha() and part.islower())):
                    return "code:" + folded
            return None
        return "code:" + folded
    if len(parts) == 1:
        return None  # a word with a stray underscore at its edge
    if "." in token:
        # "foo.bar" and "node.js" are codes; "e.g" and "U.S" are abbreviations.
        return "code:" + folded if any(len(part) > 1 for part in parts) else None
    # "well-known" and "and/or" are words; "API-Gateway" and "JSON/XML" are codes.
    for part in parts:
        if len(part) > 1 and part.isupper():
            return "code:" + folded
    return None


def _date(match: re.Match[str]) -> str | None:
    """The ``date:`` key of a date match, or ``None`` when it names no real day."""
    kind = match.lastgroup
    if kind == "alone":
        return "date:" + match.group()
    if kind == "iso":
        return _day_key(match.group("iy"), int(match.group("im")), int(match.group("id")))
    suffix = "1" if kind == "dmy" else "2"
    year = match.group("yy" + suffix)
    month = _MONTH_NUMBER[match.group("mm" + suffix)[:3].lower()]
    day = match.group("dd" + suffix)
    if day is None:
        return _day_key(year, month, None)
    # A day that does not exist ("32 May 2023") still names the month.
    return _day_key(year, month, int(day)) or _day_key(year, month, None)


def _day_key(year: str, month: int, day: int | None) -> str | None:
    """``date:YYYY-MM-DD`` (or ``date:YYYY-MM`` without a day) if that day exists."""
    if not 1000 <= int(year) <= 2999 or not 1 <= month <= 12:
        return None
    if day is None:
        return f"date:{year}-{month:02d}"
    leap = int(year) % 4 == 0 and (int(year) % 100 != 0 or int(year) % 400 == 0)
    last = 28 if month == 2 and not leap else _DAYS_IN_MONTH[month - 1]
    return f"date:{year}-{month:02d}-{day:02d}" if 1 <= day <= last else None


def _opens_sentence(text: str, index: int) -> bool:
    """Whether the word at ``index`` starts the text, a line or a sentence."""
    while index > 0:
        index -= 1
        char = text[index]
        if char in _SENTENCE_BREAKS:
            return True
        if char not in _OPENERS:
            return False
    return True


def _lowercase_words(text: str) -> frozenset[str]:
    """Words the text writes in lower case: evidence a capital was only sentence-initial."""
    return frozenset(word.casefold() for word in _WORD.findall(text) if word.islower())
