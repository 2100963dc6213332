// agents/agents/evaluation_agent.ts
import { defineAgent } from '@standardagents/spec';
export default defineAgent({
name: 'evaluation_agent',
type: 'dual_ai',
maxSessionTurns: 10,
sideA: {
label: 'Writer',
prompt: 'content_writer',
stopOnResponse: false,
maxTurns: 3,
},
sideB: {
label: 'Critic',
prompt: 'content_critic',
stopOnResponse: false,
maxTurns: 3,
endConversationTool: 'approve_content',
},
tags: ['evaluation', 'content'],
});
