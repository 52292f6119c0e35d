"""The PEP 517 build backend of the lethe-node Python package: one module, standard library only, so that
`pip install` of this folder works offline and with nothing else installed (no setuptools, no wheel).

It builds a wheel holding lethe_node.py and its .dist-info (METADATA from pyproject.toml's [project], WHEEL,
RECORD), and an sdist of this folder. Every zip entry gets one fixed time stamp (SOURCE_DATE_EPOCH, else
1980-01-01), so the same sources give the same bytes.
"""
import base64
import gzip
import hashlib
import io
import os
import pathlib
import tarfile
import time
import tomllib
import zipfile

HERE = pathlib.Path(__file__).resolve().parent
MODULES = ["lethe_node.py"]


def _project():
    return tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _dist_name(project):
    return project["name"].replace("-", "_")


def _metadata(project):
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}",
             f"Summary: {project['description']}", f"License: {project['license']['text']}",
             f"Requires-Python: {project['requires-python']}"]
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    readme = HERE / project.get("readme", "README.md")
    body = readme.read_text(encoding="utf-8") if readme.exists() else ""
    return "\n".join(lines + ["Description-Content-Type: text/markdown", "", body])


def _stamp():
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    return time.gmtime(max(epoch, 315532800))[:6]


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = _project()
    dist = f"{_dist_name(project)}-{project['version']}"
    info = f"{dist}.dist-info"
    files = [(m, (HERE / m).read_bytes()) for m in MODULES]
    files.append((f"{info}/METADATA", _metadata(project).encode()))
    files.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: lethe_node_build\nRoot-Is-Purelib: true\n"
                                   b"Tag: py3-none-any\n"))
    record = "\n".join([_record_line(n, d) for n, d in files] + [f"{info}/RECORD,,", ""])
    files.append((f"{info}/RECORD", record.encode()))
    name = f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(pathlib.Path(wheel_directory) / name, "w", zipfile.ZIP_DEFLATED) as wheel:
        for entry, data in files:
            item = zipfile.ZipInfo(entry, date_time=_stamp())
            item.external_attr = 0o644 << 16
            wheel.writestr(item, data, zipfile.ZIP_DEFLATED)
    return name


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    dist = f"{_dist_name(project)}-{project['version']}"
    name = f"{dist}.tar.gz"
    stamp = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(["pyproject.toml", "lethe_node_build.py", "README.md", *MODULES]):
            data = (HERE / path).read_bytes()
            item = tarfile.TarInfo(f"{dist}/{path}")
            item.size, item.mtime, item.mode = len(data), stamp, 0o644
            tar.addfile(item, io.BytesIO(data))
    with gzip.GzipFile(pathlib.Path(sdist_directory) / name, "wb", mtime=stamp) as out:
        out.write(buffer.getvalue())
    return name
