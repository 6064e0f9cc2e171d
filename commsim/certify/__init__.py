"""Certificates: the input on which a model below the bound must fail, found and verified.

``types`` (the :class:`~commsim.certify.types.Certificate`), ``pigeonhole`` (one-way: two Alice inputs,
one message), ``rectangle`` (two fooling-set members, one transcript, and their crossing), ``error`` (an
instance the model gets wrong) and ``view`` (what a renderer shows).  The digests and the one collision
finder they use are :mod:`commsim.core.digests`.
"""
