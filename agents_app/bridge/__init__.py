"""The one place where the engine meets Django: the store over the ORM and the
event sink over the channel layer. Each store method is one sync function (one
transaction) wrapped in ``sync_to_async``, because Django transactions do not
work in async mode."""
