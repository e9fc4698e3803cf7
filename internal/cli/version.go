package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() { register(newVersionCmd) }

// Version is the evalrun version; release builds set it with
// -ldflags "-X github.com/evalrun/evalrun/internal/cli.Version=v1.2.3".
var Version = ""

func newVersionCmd(st *State) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the evalrun version",
		Example: "  evalrun version",
		Args:    args(),
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(st.Stdout, "evalrun %s (%s, %s/%s)\n", version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}

// version returns Version, else the module version or VCS revision the
// binary was built from, else "dev".
func version() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "dev-" + rev
}
