"""The read path: from a query to ranked, explained memories.

- ``query``: query understanding (terms, entities, a time window).
- ``lanes``: the candidate lanes (text, vector, keys, entities, graph, recency).
- ``scoring``, ``adjust``, ``cooccurrence``: the score of a candidate and its corrections.
- ``rerank``: deep recall's cross-encoder reranking.
- ``history``: a memory as it was known at a past moment.
- ``pipeline``: ``Recaller``, the recall pipeline that runs the above.
- ``reinforce``: what a recall writes back (retrieval events, reinforcement).
- ``federation``: recall across peer minds.
- ``reader``: read-only access for processes and faces; ``prompt``: memories as a prompt block.

Imports ``write``, ``language`` and ``records``.
"""
