# pagemap.py PID OUT : present bit per page of the largest anonymous mapping; prints its range
import sys,struct
pid=sys.argv[1]
best=None
for line in open('/proc/%s/maps'%pid):
    p=line.split()
    if len(p)<6:
        a,b=[int(x,16) for x in p[0].split('-')]
        if best is None or b-a>best[1]-best[0]: best=(a,b)
a,b=best; n=(b-a)//4096
with open('/proc/%s/pagemap'%pid,'rb') as f:
    f.seek(a//4096*8); data=f.read(n*8)
bits=bytearray((struct.unpack_from('<Q',data,i*8)[0]>>62)&3 and 1 or 0 for i in range(n))
open(sys.argv[2],'wb').write(bits)
print('%x-%x'%(a,b))
