"""Adapters that plug a ``Mind`` into other frameworks.

Each adapter lives in its own module and is imported from there, never from
``noema`` or from this package, so ``import noema`` loads no framework::

    from noema.integrations.langchain import NoemaRetriever

    retriever = NoemaRetriever(mind=mind, k=4)
    documents = retriever.invoke("where does Ada live?")

``noema.integrations.langchain`` needs only ``langchain-core``, a dependency of
Noema.
"""
