import json,collections,statistics
R=[json.loads(l) for l in open('/tmp/trace.reader')]
C=[json.loads(l) for l in open('/tmp/trace.consumer')]
notified={r['id']:r for r in R if r['ev']=='notified'}
load={r['id']:r for r in R if r['ev']=='load'}
sent=collections.defaultdict(list)
for r in R:
    if r['ev']=='sent': sent[r['id']].append(r['t'])
recv=collections.defaultdict(list)
for c in C: recv[c['id']].append(c['t'])
rows=[]
for i,n in notified.items():
    if i not in recv or i not in load: continue
    link=n['link']
    rows.append(dict(id=i, notif=n['t']-link, load=load[i]['t']-link, plan=load[i]['plan'], read=load[i]['read'],
      sent_first=min(sent[i])-link if sent[i] else None, sent_last=max(sent[i])-link if sent[i] else None,
      recv_first=min(recv[i])-link, recv_last=max(recv[i])-link, nrecv=len(recv[i]), files=load[i]['files']))
rows.sort(key=lambda r:r['id'])
rows=rows[30:]  # skip warm-up
def pct(k,p):
    v=sorted(r[k] for r in rows if r[k] is not None); return v[min(len(v)-1,int(len(v)*p))]
for k in ['notif','load','plan','read','sent_first','sent_last','recv_first','recv_last']:
    print(f"{k:11s} p50 {pct(k,.5):7.1f} p90 {pct(k,.9):7.1f} p99 {pct(k,.99):7.1f} max {pct(k,1):7.1f}")
print("worst recv_last:")
for r in sorted(rows,key=lambda r:-r['recv_last'])[:12]: print(r)
