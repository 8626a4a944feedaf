"""Where it grows: an opt-in trace of one pair (`kerasbench run --trace N`), off by default.

In the worker, around the measured loop: tracemalloc runs from before the baseline; after the first
measured iteration and after the last one it takes a snapshot and counts the GC-tracked objects by
type. The differences, divided by the iterations between the two, say which Python allocation sites
(file:line, with the few frames that led there) and which object types grow per iteration. A TF
site alone does not tell users what to change, so the same growth is also grouped by the first
frame of each allocation that is in the user's code (not the stdlib, an installed package or
kerasbench): their lines come first. At the loop's end, the referrers of a few of the newest objects
of the types that grow are followed up to a module global (gc.get_referrers, bounded in levels,
objects and seconds): what holds them. Asked for (`--trace-native`) and where memray is installed
(the `trace` extra), a memray tracker with native frames runs over the same window (it slows a TF
iteration tens of times), and its allocations still alive at the end are grouped by their first
frame past the allocator's own: the native sites. What a trace costs is in the record (seconds
spent in snapshots and counts), and the loop's own figures move with it (tracemalloc's traces live
in the same heap): a traced record is marked (spec.trace > 0) and compare and report refuse to mix
it with untraced ones.

A module a job: tracer (the worker's Tracer, what the record keeps), sites (the allocation sites and types that
grow), containers (the containers whose length grows), referrers (what holds the objects that grow: `holders`),
frames (whose code a frame is: the user's, kerasbench's harness, a library's), records (whether a record was
traced, its trace) and render (the trace as text). Modules that need one piece import it from its module; this
namespace names them all.
"""

from .containers import container_lengths, describe_containers, grown_containers
from .frames import harness_file, user_code
from .records import Trace, record_trace, traced
from .referrers import (HOLDER_BRANCH, HOLDER_CANDIDATES, HOLDER_DEPTH, HOLDER_FRONTIER, HOLDER_SAMPLES,
                        HOLDER_SECONDS, HOLDER_TYPES, holders)
from .readout import text, where_text
from .sites import NATIVE_FRAMES, STACK_SHOWN, native_frames, python_sites, type_growth, user_sites
from .tracer import DEFAULT_TOP, FRAMES, Tracer

__all__ = ["DEFAULT_TOP", "FRAMES", "HOLDER_BRANCH", "HOLDER_CANDIDATES", "HOLDER_DEPTH", "HOLDER_FRONTIER",
           "HOLDER_SAMPLES", "HOLDER_SECONDS", "HOLDER_TYPES", "NATIVE_FRAMES", "STACK_SHOWN", "Trace", "Tracer",
           "container_lengths", "describe_containers", "grown_containers", "harness_file", "holders",
           "native_frames", "python_sites", "record_trace", "text", "traced", "type_growth", "user_code",
           "user_sites", "where_text"]
