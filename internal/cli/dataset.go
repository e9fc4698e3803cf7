package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
)

func init() { register(newDatasetCmd) }

func newDatasetCmd(st *State) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dataset",
		Short: "Import, list, show and export datasets",
		Long: `A dataset has a name and immutable, numbered versions. Importing a file (JSONL,
a JSON array or CSV) whose content differs from the latest version creates the
next version; an identical import creates nothing.`,
		Example: `  evalrun dataset import support data/support.jsonl
  evalrun dataset list
  evalrun dataset show support --version 2
  evalrun dataset versions support --json
  evalrun dataset export support > support.jsonl`,
	}
	cmd.AddCommand(newDatasetImportCmd(st), newDatasetListCmd(st), newDatasetShowCmd(st),
		newDatasetVersionsCmd(st), newDatasetExportCmd(st))
	return cmd
}

func newDatasetImportCmd(st *State) *cobra.Command {
	return &cobra.Command{
		Use:   "import NAME FILE",
		Short: "Import a JSONL, JSON or CSV file as the next version of a dataset",
		Long: `Import FILE (.jsonl, .json or .csv) as the next version of dataset NAME. Each item
has an "input" (required), an optional "id", "expected_output" and "metadata"
("tags" in it defines cohorts). A bad file is rejected whole with its line
number; nothing is written. An identical import creates no version.`,
		Example: `  evalrun dataset import support data/support.jsonl`,
		Args:    args("NAME", "FILE"),
		RunE: func(cmd *cobra.Command, a []string) error {
			return st.withStore(cmd, func(ctx context.Context, store evalrun.Store) error {
				v, created, err := dataset.Import(ctx, store, a[0], a[1])
				if err != nil {
					return err
				}
				if !created {
					fmt.Fprintf(st.Stdout, "dataset %s: unchanged, version %d (%d items)\n", a[0], v.Version, v.ItemCount)
					return nil
				}
				fmt.Fprintf(st.Stdout, "dataset %s: version %d (%d items: %d added, %d changed, %d removed)\n",
					a[0], v.Version, v.ItemCount, v.Added, v.Changed, v.Removed)
				return nil
			})
		},
	}
}

// datasetJSON is a dataset in --json output.
type datasetJSON struct {
	Name          string    `json:"name"`
	LatestVersion int       `json:"latest_version"`
	ItemCount     int       `json:"item_count"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// versionJSON is a dataset version in --json output.
type versionJSON struct {
	Dataset   string    `json:"dataset"`
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	ItemCount int       `json:"item_count"`
	Added     int       `json:"added"`
	Changed   int       `json:"changed"`
	Removed   int       `json:"removed"`
}

func toDatasetJSON(d *evalrun.Dataset) datasetJSON {
	return datasetJSON{Name: d.Name, LatestVersion: d.LatestVersion, ItemCount: d.ItemCount, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}
}

func toVersionJSON(v *evalrun.DatasetVersion) versionJSON {
	return versionJSON{Dataset: v.Dataset, Version: v.Version, CreatedAt: v.CreatedAt, ItemCount: v.ItemCount,
		Added: v.Added, Changed: v.Changed, Removed: v.Removed}
}

func newDatasetListCmd(st *State) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the datasets",
		Example: "  evalrun dataset list\n  evalrun dataset list --json",
		Args:    args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return st.withStore(cmd, func(ctx context.Context, store evalrun.Store) error {
				list, err := store.ListDatasets(ctx)
				if err != nil {
					return err
				}
				return printList(st.Stdout, asJSON, list, toDatasetJSON, "NAME\tVERSION\tITEMS\tUPDATED",
					func(d *evalrun.Dataset) string {
						return fmt.Sprintf("%s\t%d\t%d\t%s", d.Name, d.LatestVersion, d.ItemCount, timeText(d.UpdatedAt))
					})
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newDatasetShowCmd(st *State) *cobra.Command {
	var asJSON bool
	var version int
	cmd := &cobra.Command{
		Use:     "show NAME",
		Short:   "Show a dataset version and its items",
		Example: "  evalrun dataset show support\n  evalrun dataset show support --version 2 --json",
		Args:    args("NAME"),
		RunE: func(cmd *cobra.Command, a []string) error {
			return st.withStore(cmd, func(ctx context.Context, store evalrun.Store) error {
				name := a[0]
				versions, err := store.ListDatasetVersions(ctx, name)
				if err != nil {
					return notFound(err, "dataset "+name, "evalrun dataset list shows the datasets")
				}
				v := versions[len(versions)-1]
				if version != 0 {
					if version < 1 || version > len(versions) || versions[version-1].Version != version {
						return &notFoundError{msg: fmt.Sprintf("dataset %s has no version %d (it has versions 1 to %d)", name, version, len(versions))}
					}
					v = versions[version-1]
				}
				var items []*evalrun.Item
				if err := store.ScanItems(ctx, name, v.Version, func(it *evalrun.Item) error {
					items = append(items, it)
					return nil
				}); err != nil {
					return err
				}
				if asJSON {
					if items == nil {
						items = []*evalrun.Item{}
					}
					return writeJSON(st.Stdout, struct {
						versionJSON
						Items []*evalrun.Item `json:"items"`
					}{toVersionJSON(v), items})
				}
				fmt.Fprintf(st.Stdout, "dataset %s version %d (of %d), %d items, created %s\n\n",
					name, v.Version, len(versions), v.ItemCount, timeText(v.CreatedAt))
				tw := newTable(st.Stdout, "ID\tTAGS\tINPUT\tEXPECTED")
				for _, it := range items {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", it.ID, strings.Join(it.Tags(), ","),
						clip(inputPreview(it.Input), 50), clip(evalrun.Text(it.Expected), 30))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&version, "version", 0, "the version to show (default: the latest)")
	return cmd
}

func newDatasetVersionsCmd(st *State) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "versions NAME",
		Short:   "List the versions of a dataset",
		Example: "  evalrun dataset versions support\n  evalrun dataset versions support --json",
		Args:    args("NAME"),
		RunE: func(cmd *cobra.Command, a []string) error {
			return st.withStore(cmd, func(ctx context.Context, store evalrun.Store) error {
				versions, err := store.ListDatasetVersions(ctx, a[0])
				if err != nil {
					return notFound(err, "dataset "+a[0], "evalrun dataset list shows the datasets")
				}
				return printList(st.Stdout, asJSON, versions, toVersionJSON, "VERSION\tITEMS\tADDED\tCHANGED\tREMOVED\tCREATED",
					func(v *evalrun.DatasetVersion) string {
						return fmt.Sprintf("%d\t%d\t%d\t%d\t%d\t%s", v.Version, v.ItemCount, v.Added, v.Changed, v.Removed, timeText(v.CreatedAt))
					})
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newDatasetExportCmd(st *State) *cobra.Command {
	var version int
	var out string
	cmd := &cobra.Command{
		Use:     "export NAME",
		Short:   "Write a dataset version as JSONL (one item per line)",
		Example: "  evalrun dataset export support > support.jsonl\n  evalrun dataset export support --version 1 -o v1.jsonl",
		Args:    args("NAME"),
		RunE: func(cmd *cobra.Command, a []string) error {
			return st.withStore(cmd, func(ctx context.Context, store evalrun.Store) error {
				export := func(w io.Writer) error {
					bw := bufio.NewWriter(w)
					enc := json.NewEncoder(bw)
					enc.SetEscapeHTML(false)
					err := store.ScanItems(ctx, a[0], version, func(it *evalrun.Item) error { return enc.Encode(it) })
					if err != nil {
						// Version 0 is the latest: only a missing dataset has none.
						if _, lerr := store.ListDatasetVersions(ctx, a[0]); version == 0 || errors.Is(lerr, evalrun.ErrNotFound) {
							return notFound(err, "dataset "+a[0], "evalrun dataset list shows the datasets")
						}
						return notFound(err, fmt.Sprintf("dataset %s version %d", a[0], version), "evalrun dataset versions "+a[0]+" lists them")
					}
					return bw.Flush()
				}
				if out == "" {
					return export(st.Stdout)
				}
				return writeFile(out, func(f *os.File) error { return export(f) })
			})
		},
	}
	cmd.Flags().IntVar(&version, "version", 0, "the version to export (default: the latest)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to FILE instead of standard output")
	return cmd
}

// writeJSON writes v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// newTable returns a writer aligning tab-separated columns on w, as the
// commands print tables, with header (when not empty) as its first line.
// Flush writes the table.
func newTable(w io.Writer, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if header != "" {
		fmt.Fprintln(tw, header)
	}
	return tw
}

// printList prints list on w: with asJSON as a JSON array of toJSON of each
// element ([] when empty), else as a table of header and one row (its
// tab-separated columns) per element.
func printList[T, J any](w io.Writer, asJSON bool, list []T, toJSON func(T) J, header string, row func(T) string) error {
	if asJSON {
		out := make([]J, len(list))
		for i, e := range list {
			out[i] = toJSON(e)
		}
		return writeJSON(w, out)
	}
	tw := newTable(w, header)
	for _, e := range list {
		fmt.Fprintln(tw, row(e))
	}
	return tw.Flush()
}

// timeText formats a time for tables, "—" when zero.
func timeText(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// clip returns s on one line, cut to n runes with "…".
// inputPreview is an item's input as a table shows it: a conversation as
// its messages ("user: … / assistant: …"), not as a JSON blob.
func inputPreview(in json.RawMessage) string {
	msgs, ok := evalrun.Conversation(in)
	if !ok {
		return evalrun.Text(in)
	}
	parts := make([]string, 0, len(msgs))
	for _, m := range msgs {
		parts = append(parts, m.Role+": "+m.Content)
		if len(parts) == 10 { // the table cell is clipped far before
			break
		}
	}
	return strings.Join(parts, " / ")
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
