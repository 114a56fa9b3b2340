"""The errors of the sluice shared-memory channel."""


class ProtocolError(OSError):
    """The engine broke the protocol: a counter went backwards or past what is possible. The
    channel cannot be used any more."""
