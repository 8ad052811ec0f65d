"""Webhook delivery rules that both the facade and the service loop need.

Why a package of its own below both: the facade checks a target when a webhook is registered
and the sender checks it again before every delivery (``lsm.webhooks.targets``). Kept in the
service loop, the rule made the facade import ``lsm.services`` while the loop's dispatcher reads
the change feed through the facade: an import cycle between two layers.
"""
