"""The text analysis the write path and the read path share, with no storage in it.

- ``terms``: stop words and the terms of a text or a query.
- ``entities``: names, quoted strings, codes and identifiers found in a text.
- ``timeexpr``: time expressions ("last week", "in March 2024") resolved to windows;
  ``timecalendar`` (windows, the calendar, one resolver per kind of expression) and
  ``timegrammar`` (the rules and the scan that finds them) are its parts.

May import ``records``; today it imports nothing of ``noema.memory`` at all.
"""
