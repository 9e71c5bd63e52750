// Who or what stopped a job, from the clocks in the ranks' flight dumps
// (comm/flight_dumps.h), for the first words of tierzero diagnose's verdict
// (flight_diagnose.cc). Internal.
//
// The evidence, strongest first:
//   - paused: a rank whose process did not run for at least a second while
//     the others waited (its liveness ticker, flight_state.h, saw a gap:
//     SIGSTOP, a debugger, a frozen host); conclusive;
//   - late: a rank that entered a collective the others were waiting in
//     a second or more after the last of them (it resumed, or its compute
//     or I/O took that long); conclusive;
//   - partition: no rank paused or late, and the collectives that every
//     member entered but that did not complete all cross one level, between
//     two or more groups of the level below (a link or the network of that
//     level failed; no rank is to blame); conclusive;
//   - first to stop: none of these and no rank missing from a collective
//     the others wait in: the rank whose last progress (a collective
//     started or completed, an activity begun) is the oldest; the most
//     likely straggler, not a proof.
#pragma once
#include <nlohmann/json.hpp>

#include "comm/flight_dumps.h"

namespace tierzero {

// The suspect as JSON (null when the dumps name none): "how" (paused, late,
// partition, first_to_stop), "conclusive", "rank" (but for a partition),
// and the figures of its evidence (docs/formats.md, "Reading a verdict").
// `missing_known`: first_missing names a rank, so first_to_stop is not tried.
nlohmann::json flight_suspect(const FlightDumps& dumps, bool missing_known);

}  // namespace tierzero
