"""The power-loss file system (scripts/powerloss-fs) mounted over a backing directory, for
scripts/power-loss and scripts/powerloss-regressions."""
import os, subprocess, sys, time

FS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "powerloss-fs")


class Disk:
    """A backing directory and the power-loss file system over it, always at the same
    mount point (the records name the paths they were given)."""
    def __init__(self, backing, ext4_names=False):
        self.backing = backing
        self.mnt = backing + "-mnt"
        os.makedirs(self.mnt, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, FS, "mount", backing, self.mnt] + (["--ext4-names"] if ext4_names else []),
                                     stderr=subprocess.DEVNULL)
        for _ in range(200):
            if os.path.ismount(self.mnt): return
            time.sleep(0.05)
        self.proc.kill(); self.proc.wait()
        sys.exit("power-loss: the file system did not mount")

    def cut(self, tear=None, keep=None, ext4_commit=False):
        subprocess.run([sys.executable, FS, "cut", self.backing, self.mnt] + (["--tear", str(tear)] if tear is not None else [])
                       + (["--keep", str(keep)] if keep is not None else []) + (["--ext4-commit"] if ext4_commit else []), check=True)
        self.proc.wait(30); os.rmdir(self.mnt)

    def unmount(self):
        subprocess.run([sys.executable, FS, "unmount", self.backing, self.mnt], check=True)
        self.proc.wait(30); os.rmdir(self.mnt)
