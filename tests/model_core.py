"""Device-model core tests in a VM: NVIDIA's own upstream mlx5_core must bring the model up."""

from __future__ import annotations

import re

from harness import Env, check_clean_dmesg, describe, one_vm, random_fw

# mlx5_core lines that mean the model disagreed with the C driver somewhere.
MLX5_ERRORS = re.compile(r"mlx5_core.*(failed|error|err |timeout|unsupported|mlx5_cmd_out_err|"
                         r"probe.*-\d+|syndrome|status)", re.IGNORECASE)
# Known, understood messages that are not disagreements (Documentation/model.md):
# the model has no vendor-specific PCI capability (VSC gateway; crdump/sw-reset stay off).
MLX5_EXPECTED = re.compile(r"Failed to get valid vendor specific ID")


def mlx5_errors(dmesg: str) -> list[str]:
    return [l for l in dmesg.splitlines() if MLX5_ERRORS.search(l) and not MLX5_EXPECTED.search(l)]


def page_reports(model_log: str) -> list[str]:
    return [l for l in model_log.splitlines() if "page accounting" in l]


def devlink_versions(info: str, kind: str) -> dict[str, str]:
    """The `kind` (fixed/running/stored) versions of `devlink dev info` text output."""
    found, indent = {}, None
    for line in info.splitlines():
        depth = len(line) - len(line.lstrip())
        if line.strip() == f"{kind}:":
            indent = depth
        elif indent is not None:
            if depth <= indent:
                break
            name, _, value = line.strip().partition(" ")
            found[name] = value
    return found


def tests(env: Env):
    def upstream_mlx5_core_brings_up_the_model():
        fw = random_fw()
        r = one_vm(env, """
            modprobe mlx5_core
            sleep 1
            test -e /sys/bus/pci/drivers/mlx5_core/0000:01:00.0
            devlink dev info pci/0000:01:00.0
            devlink dev info pci/0000:01:00.0 > /cx4/devlink.txt
            rmmod mlx5_core
            echo unloaded
        """, model_args=["--fw-version", fw], timeout=240)
        assert r.status == 0 and "unloaded" in r.job_log, describe(r)
        assert f"firmware version: {fw}" in r.dmesg, r.dmesg[-3000:]
        errs = mlx5_errors(r.dmesg)
        assert not errs, "mlx5_core reported errors:\n" + "\n".join(errs)
        assert "driver mlx5_core" in r.job_log and "fw.psid MT_2190110032" in r.job_log, r.job_log
        # The running and stored firmware come from MCQS/MCQI (MCAM advertises both).
        for kind in ("running", "stored"):
            seen = devlink_versions(r.job_log, kind).get("fw.version")
            assert seen == fw, f"devlink {kind} fw.version: expected {fw}, seen {seen}\n{r.job_log}"
        assert "fw query isn't supported" not in r.dmesg, r.dmesg[-3000:]
        check_clean_dmesg(r.dmesg)
        reps = page_reports(r.model_log)
        assert reps and all("balanced" in l and "UNBALANCED" not in l for l in reps), \
            "page accounting:\n" + "\n".join(reps) + "\n" + r.model_log[-2000:]
        assert any("given 0," not in l for l in reps), "the page path was not exercised"

    def ten_modprobe_rmmod_cycles():
        r = one_vm(env, """
            for i in $(seq 10); do
                modprobe mlx5_core
                test -e /sys/bus/pci/drivers/mlx5_core/0000:01:00.0
                rmmod mlx5_core
            done
            echo cycles-done
        """, timeout=400)
        assert r.status == 0 and "cycles-done" in r.job_log, describe(r)
        assert r.dmesg.count("firmware version:") == 10, r.dmesg[-3000:]
        errs = mlx5_errors(r.dmesg)
        assert not errs, "mlx5_core reported errors:\n" + "\n".join(errs)
        check_clean_dmesg(r.dmesg)
        reps = page_reports(r.model_log)
        assert len([l for l in reps if "teardown" in l]) >= 10, "\n".join(reps)
        assert all("UNBALANCED" not in l for l in reps), "\n".join(reps)

    yield "upstream mlx5_core brings up the model", upstream_mlx5_core_brings_up_the_model
    yield "10 mlx5_core modprobe/rmmod cycles", ten_modprobe_rmmod_cycles
