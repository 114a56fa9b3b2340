"""Builds the job's archives with Python's own tarfile and zipfile."""
import io
import os
import tarfile
import zipfile


def add(archive, name, data, mode=0o644):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    archive.addfile(info, io.BytesIO(data))


count = b"#!/usr/bin/env python3\nimport sys\nprint(len(open(sys.argv[1]).read().split()))\n"
with tarfile.open("tools.tgz", "w:gz") as t:
    # Not executable here: Hadoop makes every unpacked file r-xr-xr-x.
    add(t, "bin/count.py", count, 0o600)
    add(t, "words.txt", b"alpha beta gamma\ndelta\n")
    link = tarfile.TarInfo("link")
    link.type = tarfile.SYMTYPE
    link.linkname = "words.txt"
    t.addfile(link)
with tarfile.open("second.tar.gz", "w:gz") as t:
    add(t, "second.txt", b"from -cacheArchive\n")
with tarfile.open("plain.tar", "w") as t:
    add(t, "conf/settings.txt", b"mode=fast\n")
with zipfile.ZipFile("lib.zip", "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("helper.sh", "#!/bin/sh\necho helper ran with $1\n")
    z.writestr("nested/deep/file.txt", "deep\n")
with zipfile.ZipFile("data.JAR", "w") as z:
    z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    z.writestr("x.txt", "x\n")
with open("notes.bin", "wb") as f:
    f.write(b"not an archive\n")
