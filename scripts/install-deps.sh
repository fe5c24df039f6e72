#!/bin/sh
# Install what gpuctl needs to build, test and run its quickstart on
# Debian 12, with apt-get; uses sudo when not root.  Safe to run again.
set -eu
PKGS="build-essential cmake pkg-config git clang libclang-rt-dev
libcurl4-openssl-dev libssl-dev libcjson-dev libyaml-dev libxml2-dev
libsqlite3-dev zlib1g-dev libcmocka-dev libcsv-dev libinih-dev
python3 python3-torch python3-sklearn python3-jsonschema python3-yaml python3-botocore
shellcheck cloud-init coreutils procps curl"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "install-deps: everything is installed"
    exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing:$missing"
$SUDO apt-get update -qq
# shellcheck disable=SC2086  # word splitting of the package list is wanted
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
