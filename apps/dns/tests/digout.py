"""Reading dig's and kdig's text output, for apps/dns/tests/host_dig.py (the
engine on 127.0.0.1) and apps/dns/tests/test_dns.py (the booted appliance)."""
import re


def status(out):
    """The rcode's name (NOERROR, NXDOMAIN...); the whole output when there is
    none, so a failed assertion shows what came back."""
    m = re.search(r"status: (\w+)", out)
    return m.group(1) if m else out


def flags(out):
    """The header's flags: {'qr', 'aa', 'rd', ...}."""
    m = re.search(r";; flags: ([a-z ]*);", out)
    return set(m.group(1).split()) if m else set()


def count(out, section):
    """A section's record count (QUERY, ANSWER, AUTHORITY, ADDITIONAL); -1
    when the output has none."""
    m = re.search(section + r": (\d+)", out)
    return int(m.group(1)) if m else -1
