// Package evalrun holds the domain of the evalrun evaluation tool: datasets and
// their items, targets and their outputs, scorers and their scores, runs and
// their results, the store interfaces every backend implements, and the error
// types the engine uses to decide what to retry.
//
// The package imports only the standard library. Behaviour lives elsewhere:
// engine/ runs a dataset, target/ and openai/ implement targets, scorer/
// implements scorers, sqlite/, postgres/ and inmem/ implement the stores,
// report/ aggregates results, internal/cli is the command line.
//
// Values that travel through the pipeline (an item's input and expected
// output, a target's output) are raw JSON ([encoding/json.RawMessage]), so
// they are stored and compared exactly as given and cost nothing to pass on.
// [Text] and [Canonical] give the forms scorers compare.
package evalrun
