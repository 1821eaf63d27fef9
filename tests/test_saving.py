"""Saving never destroys what is not ours and never leaves half a file (issue 14 item 3,
issue 13 item 6): special files are refused, links are written through, concurrent saves do
not collide, and a kill -9 during a save leaves the old file intact."""
from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time

import pytest
import superword
from superword import _files

DOCS = ["the cat sat on the mat", "the dog sat on the log", "one of the best of the best"] * 5
posix_only = pytest.mark.skipif(os.name != "posix", reason="FIFOs, links and kill -9 are POSIX")


@pytest.fixture(params=["reference", "rust"])
def tok(request):
    return superword.train(DOCS, 300, "boundless", backend=request.param)


@posix_only
def test_a_fifo_is_refused_and_stays_a_fifo(tmp_path, tok):
    fifo = tmp_path / "pipe.model"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"pipe\.model is a FIFO \(named pipe\), not a regular file"):
        tok.save(fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe.model"]


@posix_only
def test_a_device_node_is_refused(tmp_path, tok):
    # os.devnull is a character device on every POSIX system; the check comes before any write
    with pytest.raises(ValueError, match="is a character device, not a regular file"):
        _files.target_of(os.devnull)
    link = tmp_path / "null.model"
    link.symlink_to(os.devnull)
    with pytest.raises(ValueError, match=r"null\.model \(a link to /dev/null\) is a character device"):
        tok.save(link)
    assert link.is_symlink()


@posix_only
def test_a_symlink_is_written_through(tmp_path, tok):
    real = tmp_path / "models" / "real.model"
    real.parent.mkdir()
    real.write_text("old contents")
    os.chmod(real, 0o640)
    link = tmp_path / "link.model"
    link.symlink_to(real)
    tok.save(link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text(encoding="utf-8") == tok.model_text()
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o640  # a replaced file keeps its mode
    leftovers = [p.name for p in real.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_threads_saving_to_one_path_do_not_collide(tmp_path, tok):
    target = tmp_path / "shared.model"
    assert save_from_threads(lambda: tok.save(target)) == []
    assert target.read_text(encoding="utf-8") == tok.model_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.model", "shared.model.json"]


@posix_only
def test_kill_9_during_saves_leaves_a_whole_file(tmp_path):
    """A process saving in a loop is killed at an arbitrary moment: the target holds one whole
    model (the old or the new), and the next save removes the dead process's temporary file."""
    small = superword.train(DOCS, 300, "bpe")
    big_docs = [f"word{i} and word{i * 7 % 1000} then more{i % 313}" for i in range(3000)]
    big = superword.train(big_docs, 3000, "boundless")
    target = tmp_path / "m.model"
    small.save(target)
    big.save(tmp_path / "big.model")
    script = ("import sys, superword\n"
              "tok = superword.Tokenizer.load(sys.argv[1])\n"
              "print('ready', flush=True)\n"
              "while True:\n"
              "    tok.save(sys.argv[2])\n")
    for delay in (0.05, 0.13, 0.31):
        proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "big.model"), str(target)],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        assert target.read_text(encoding="utf-8") in (small.model_text(), big.model_text())
        superword.Tokenizer.load(target)  # parses
    # a temporary file as a kill -9 leaves it, from a process that has ended
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    stale = tmp_path / f".m.model.superword-{_files._host()}-{dead.stdout.strip()}-abc.tmp"
    stale.write_text("half a mod")
    small.save(target)
    assert not stale.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


@posix_only
def test_a_live_writers_temporary_file_is_left_alone(tmp_path, tok):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        busy = tmp_path / f".m.model.superword-{_files._host()}-{sleeper.pid}-abc.tmp"
        busy.write_text("being written")
        tok.save(tmp_path / "m.model")
        assert busy.read_text() == "being written"
    finally:
        sleeper.kill()
        sleeper.wait()


@posix_only
@pytest.mark.parametrize("backend", ["reference", "rust"])
def test_tiktoken_files_follow_the_same_rules(tmp_path, backend):
    plain = superword.train(DOCS, 270, "bpe", script_aware=False, backend=backend)
    fifo = tmp_path / "ranks.tiktoken"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        plain.save_tiktoken(fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    target = tmp_path / "shared.tiktoken"
    assert save_from_threads(lambda: plain.save_tiktoken(target)) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ranks.tiktoken", "shared.tiktoken"]


def save_from_threads(save, threads=4, times=15) -> list[BaseException]:
    """Call ``save`` ``times`` times in each of ``threads`` threads at once; the errors raised."""
    errors: list[BaseException] = []

    def save_many():
        try:
            for _ in range(times):
                save()
        except BaseException as exc:
            errors.append(exc)
    workers = [threading.Thread(target=save_many) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return errors
