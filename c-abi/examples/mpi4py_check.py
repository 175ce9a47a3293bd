"""A check that mpi4py, built against this library, works on it (not part of the test suite:
building mpi4py takes minutes and needs PyPI). See the README, c-abi section:

    MPICC=$PWD/target/release/mpicc pip install --no-binary mpi4py mpi4py
    ./target/release/mpirun -n 3 python c-abi/examples/mpi4py_check.py
"""
from mpi4py import MPI
import array
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
# pickled object collectives and p2p
data = comm.bcast({"hello": 42} if rank == 0 else None, root=0)
assert data == {"hello": 42}
tot = comm.allreduce(rank, op=MPI.SUM)
assert tot == size * (size - 1) // 2
g = comm.gather(rank * 2, root=0)
if rank == 0:
    assert g == [r * 2 for r in range(size)]
# buffer interface
a = array.array('d', [float(rank)] * 4)
b = array.array('d', [0.0] * 4)
comm.Allreduce(a, b, op=MPI.MAX)
assert list(b) == [float(size - 1)] * 4
if size > 1:
    if rank == 0:
        comm.send("ping", dest=1, tag=5)
    elif rank == 1:
        assert comm.recv(source=0, tag=5) == "ping"
sub = comm.Split(rank % 2, rank)
assert sub.Get_size() == (size + 1 - rank % 2) // 2
cart = comm.Create_cart([size], periods=[True])
src, dst = cart.Shift(0, 1)
assert dst == (rank + 1) % size
req = comm.Iallreduce(a, b, op=MPI.SUM); req.Wait()
assert b[0] == float(size * (size - 1) // 2)
dt = MPI.DOUBLE.Create_vector(2, 1, 2).Commit()
dt.Free()
comm.Barrier()
if rank == 0:
    print("mpi4py", MPI.Get_library_version().splitlines()[0], "OK on", size)
