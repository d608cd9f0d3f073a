"""One sharding per answer store: shards of one N write together, a run split another way is refused."""

from __future__ import annotations

import pytest

from probmed.core.errors import StoreLockedError
from probmed.inference.store_lock import ShardingLock, sharding_of


def test_the_sharding_of_a_store_file():
    assert sharding_of("answers.jsonl") == 1 and sharding_of("shard-001-of-002.jsonl") == 2
    assert sharding_of("shard-000-of-016.jsonl") == 16 and sharding_of("other.jsonl") == 1


def test_shards_of_one_run_share_the_store_and_another_split_is_refused(tmp_path):
    s0, s1 = ShardingLock(tmp_path, 2).acquire(), ShardingLock(tmp_path, 2).acquire()  # --shard 0/2 and 1/2
    (tmp_path / ".shard-000-of-002.jsonl.lock").write_text("4242\n")  # the per-file lock names its writer
    with pytest.raises(StoreLockedError, match=r"in use by a run with --shard i/2 \(pid 4242\).*same --shard N"):
        ShardingLock(tmp_path, 1).acquire()  # unsharded: shares every question with both
    with pytest.raises(StoreLockedError, match="--shard i/2"):
        ShardingLock(tmp_path, 3).acquire()
    s0.release()
    with pytest.raises(StoreLockedError):
        ShardingLock(tmp_path, 1).acquire()  # 1/2 still writes
    s1.release()
    assert not (tmp_path / ".sharding-2.lock").exists() and not (tmp_path / ".store.lock").exists()
    whole = ShardingLock(tmp_path, 1).acquire()  # nobody else: fine
    with pytest.raises(StoreLockedError, match=r"in use by an unsharded run"):
        ShardingLock(tmp_path, 2).acquire()
    whole.release()
    assert [p.name for p in tmp_path.iterdir()] == [".shard-000-of-002.jsonl.lock"]


def test_a_dead_holders_lock_file_is_no_obstacle(tmp_path):
    (tmp_path / ".sharding-2.lock").write_text("")  # left by a SIGKILLed run: the kernel dropped its lock
    lock = ShardingLock(tmp_path, 1).acquire()
    assert not (tmp_path / ".sharding-2.lock").exists()
    lock.release()


def test_a_waiter_gets_the_store_when_the_other_run_ends(tmp_path):
    import threading

    other = ShardingLock(tmp_path, 1).acquire()
    threading.Timer(0.5, other.release).start()
    waited = ShardingLock(tmp_path, 2, wait_s=30).acquire()
    waited.release()
