// tierzero diagnose: the ranks' flight dumps (tierzero/flight_recorder.h)
// merged into a verdict that a person reads first (docs/formats.md,
// "Reading a verdict"):
//   - for each communicator, the last sequence number each rank entered
//     and completed (the table lists those where the ranks differ);
//   - the first collective that some ranks entered and others did not
//     (a job of a schedule queue when the engine queued it, else one
//     communicator's collective), the ranks waiting in it, the ranks
//     missing from it and what each was doing: the collective it waits in
//     elsewhere, or its activity, with how long before its dump;
//   - collectives whose kind, bytes or dtype differ between ranks at one
//     sequence number of one communicator (a mismatch, named as the order
//     checker names one);
//   - ranks of the job with no dump at all (dead).
#pragma once
#include <string>
#include <vector>

namespace tierzero {

struct FlightDiagnosis {
  std::string text;  // the verdict, for a person
  std::string json;  // the same, for tools (one JSON object)
  // Files that could not be used (truncated, corrupt, another job's or
  // world size's), each named with why; the rest is diagnosed without them.
  std::vector<std::string> problems;
};

// Reads DIR/flight/rank-*.json (or DIR/rank-*.json when DIR is the flight
// folder itself) and diagnoses them. Throws FormatError, naming DIR and
// what was wrong with each file, when no usable dump is there.
FlightDiagnosis diagnose_flight(const std::string& dir);

}  // namespace tierzero
