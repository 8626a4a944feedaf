"""Errors a user can act on. The CLI prints them on one line and exits 2."""


class UsageError(Exception):
    """A user mistake: an unknown name, a bad value, an unwritable path, a bad file."""


class Skip(Exception):
    """This (loop shape, strategy) pair cannot run here; the message says why."""


def unknown(kind, value, valid):
    """The error for a name that is not in a registry, listing the valid ones."""
    return UsageError(
        f"Unknown {kind}. Received: {kind}={value!r}. Expected one of: {', '.join(sorted(valid))}."
    )
