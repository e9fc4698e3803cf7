// Package suite reads evalrun's suite files (YAML; docs/suite.md): it
// parses them with go.yaml.in/yaml/v3 nodes for positions, expands ${VAR}
// and ${VAR:-default} from an [Env], validates everything before a run
// starts and builds the target and the scorers.
//
// Every problem of a file is collected and reported at once in an *[Error]
// (matching evalrun.ErrInvalid), one line each:
//
//	suite.yaml:LINE:COL: key.path: what is wrong (what to do)
//
// Unknown keys get a suggestion, unknown target or scorer kinds the list of
// known ones; scorers are built with scorer.New (so bad regexes, schemas and
// expressions are found), fail_on conditions are parsed and checked against
// the scorers' names.
//
// Secrets: [Suite.RunConfig] is what a run stores: the file with its ${VAR}
// references unexpanded, CLI overrides ([Suite.Apply]) and the item
// [Selection] applied, literal secrets redacted. [FromRunConfig] rebuilds
// the same suite from it with the reader's own environment, for --resume
// and distributed workers.
package suite
