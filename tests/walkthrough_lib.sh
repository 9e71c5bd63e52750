# Shared by the walkthrough tests: runs a page's commands as the page gives
# them. Sourced after script_lib.sh (which sets $tz, $mpirun, $tmp, ok, bad).
#
# run_walkthrough DOC DIR: every ```sh block of the Markdown file DOC, in
# order, joined into DIR/walkthrough.sh and run there by bash -e -x (the
# first command that fails stops it; the output, with each command, goes to
# DIR/walkthrough.log), with `tierzero` and `mpirun` on PATH (the binaries
# under test) and without the Open MPI variables the test suite sets for
# root and oversubscription: a page that runs mpirun must say what it needs.
# Blocks fenced ```sh cluster need a cluster (Slurm, GPUs): they are checked
# by bash -n only. Returns the script's exit status; prints the counts.
run_walkthrough() {
  local doc=$1 dir=$2 bin
  bin=$(mktemp -d "$tmp/bin.XXXX")
  ln -s "$(realpath "$tz")" "$bin/tierzero"
  ln -s "$(command -v "$mpirun")" "$bin/mpirun"
  mkdir -p "$dir"
  awk -v out="$dir/walkthrough.sh" -v cluster="$dir/cluster.sh" '
    /^```sh$/ { to = out; runs++; print "# block " NR " of the page" > to; next }
    /^```sh cluster$/ { to = cluster; clusters++; next }
    /^```/ { to = ""; next }
    to != "" { print > to }
    END { printf "%d blocks to run, %d cluster blocks\n", runs, clusters }' "$doc"
  [ -s "$dir/walkthrough.sh" ] || { echo "no \`\`\`sh block in $doc"; return 1; }
  if [ -f "$dir/cluster.sh" ] && ! bash -n "$dir/cluster.sh"; then echo "a cluster block of $doc is not valid shell"; return 1; fi
  (cd "$dir" && env -u OMPI_ALLOW_RUN_AS_ROOT -u OMPI_ALLOW_RUN_AS_ROOT_CONFIRM -u OMPI_MCA_rmaps_base_oversubscribe \
    PATH="$bin:$PATH" bash -e -x walkthrough.sh > walkthrough.log 2>&1)
}
